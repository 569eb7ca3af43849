package store

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tolerantDoc keeps the members that are numbers and rejects the others,
// as protocol's stored configs keep the entries that decode.
type tolerantDoc struct {
	kept     map[string]float64
	rejected []string
}

func (d *tolerantDoc) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	d.kept, d.rejected = map[string]float64{}, nil
	for k, v := range raw {
		var f float64
		if json.Unmarshal(v, &f) != nil {
			d.rejected = append(d.rejected, k)
			continue
		}
		d.kept[k] = f
	}
	return nil
}

func (d *tolerantDoc) RejectedEntries() error {
	if len(d.rejected) == 0 {
		return nil
	}
	return errors.New("not a number: " + strings.Join(d.rejected, ", "))
}

// A document a Tolerant value reads with rejected entries is found, with
// the others, and a *RejectedError; the file stays in place and a copy of
// its bytes is kept beside it, once however often it is read.
func TestRejectedEntriesKeepTheFileAndACopy(t *testing.T) {
	s := openTemp(t)
	p := s.path("devices/arm")
	original := []byte(`{"a": 1, "b": "new-enum-value", "c": 3}`)
	writeRaw(t, p, original)
	var kept string
	for i := 0; i < 2; i++ {
		var d tolerantDoc
		found, err := s.Load("devices/arm", &d)
		var rerr *RejectedError
		if !found || !errors.As(err, &rerr) {
			t.Fatalf("Load: %v %v, want found with a *RejectedError", found, err)
		}
		if d.kept["a"] != 1 || d.kept["c"] != 3 || len(d.rejected) != 1 {
			t.Fatalf("read %+v, want a and c kept, b rejected", d)
		}
		if rerr.Path != p || !strings.HasPrefix(rerr.KeptAt, p+keptInfix) || !strings.Contains(err.Error(), "not a number: b") {
			t.Fatalf("the error: %+v (%v)", rerr, err)
		}
		if i == 1 && rerr.KeptAt != kept {
			t.Fatalf("read again, the copy is %s, want the one kept before, %s", rerr.KeptAt, kept)
		}
		kept = rerr.KeptAt
		if b, err := os.ReadFile(kept); err != nil || string(b) != string(original) {
			t.Fatalf("the copy: %q %v", b, err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != string(original) {
			t.Fatalf("the file itself: %q %v, want it left as it is", b, err)
		}
	}
	if copies, _ := filepath.Glob(p + keptInfix + "*"); len(copies) != 1 {
		t.Fatalf("copies: %v, want one", copies)
	}
	// A clean document is no error, and a value that is not Tolerant
	// never sees one.
	writeRaw(t, p, []byte(`{"a": 1}`))
	var d tolerantDoc
	if found, err := s.Load("devices/arm", &d); !found || err != nil {
		t.Fatalf("a clean document: %v %v", found, err)
	}
	writeRaw(t, p, original)
	var plain map[string]any
	if found, err := s.Load("devices/arm", &plain); !found || err != nil {
		t.Fatalf("a plain value: %v %v", found, err)
	}
}
