package protocol

import "testing"

func TestCloseReasonTable(t *testing.T) {
	want := map[CloseReason]int{
		CloseClientClosed: 1000, CloseReadError: 1001, CloseWriteTimeout: 1008, CloseMessageTooBig: 1009,
		CloseShutdown: 1001, CloseInternalError: 1011, CloseProtocolViolation: 1002,
	}
	got := CloseReasons()
	if len(got) != len(want) {
		t.Fatalf("CloseReasons() = %v, want the %d reasons", got, len(want))
	}
	for _, r := range got {
		if r.CloseCode() != want[r] {
			t.Errorf("%s: close code %d, want %d", r, r.CloseCode(), want[r])
		}
		// A close frame carries at most 123 bytes of text (RFC 6455 5.5).
		if n := len(r.CloseText()); n == 0 || n > 123 {
			t.Errorf("%s: close text of %d bytes", r, n)
		}
	}
	if c := CloseReason("no_such_reason").CloseCode(); c != 1011 {
		t.Errorf("unknown reason: close code %d, want 1011", c)
	}
}
