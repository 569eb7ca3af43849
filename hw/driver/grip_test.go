package driver_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// shortWritePort takes one byte less than each write asks.
type shortWritePort struct{ *hwtest.ArmPort }

func (p shortWritePort) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	return p.ArmPort.Write(b[:len(b)-1])
}

func TestOpenGripFailures(t *testing.T) {
	o := driver.GripOptions{Path: "test", InfoAttempts: 2, InfoTimeout: 5 * time.Millisecond}
	tests := []struct {
		name    string
		short   bool
		wantErr error
	}{
		// An arm never answers the grip query: no grip info, and not an
		// arm's wake-up failure.
		{"nothing answers", false, driver.ErrNoGripInfo},
		{"short write", true, driver.ErrPortWrite},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ap := hwtest.NewArmPort(0x049D, [16]byte{1})
			var err error
			if tc.short {
				_, err = driver.OpenGrip(shortWritePort{ap}, o)
			} else {
				_, err = driver.OpenGrip(ap, o)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("OpenGrip error = %v, want %v", err, tc.wantErr)
			}
			if errors.Is(err, driver.ErrWake) {
				t.Errorf("OpenGrip error %v reports an arm's wake-up failure", err)
			}
			if !ap.Closed {
				t.Error("OpenGrip did not close the port it failed on")
			}
		})
	}
}
