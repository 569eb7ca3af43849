package store_test

import (
	"fmt"
	"os"
	"time"

	"github.com/hapticd/hapticd/actors/store"
)

func Example() {
	dir, err := os.MkdirTemp("", "hapticd-state-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	s, err := store.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	type forceGate struct {
		Gain float64 `json:"gain"`
	}
	// An HTTP POST: durable before it is answered.
	if err := s.Save("devices/arm3-049D", forceGate{Gain: 0.5}); err != nil {
		fmt.Println(err)
		return
	}
	// WebSocket configure at 1 kHz: coalesced, one write per document.
	wb := s.NewWriteBehind(time.Second)
	profile := "profiles/" + store.EscapeName("co.example.app:main") + "/arm3-049D"
	for i := range 1000 {
		wb.Put(profile, forceGate{Gain: float64(i) / 1000})
	}
	if err := wb.Close(); err != nil { // on shutdown
		fmt.Println(err)
		return
	}

	var g forceGate
	found, err := s.Load(profile, &g)
	fmt.Println(found, err, g.Gain)
	names, _ := s.List("")
	fmt.Println(names)
	// Output:
	// true <nil> 0.999
	// [devices/arm3-049D profiles/co.example.app%3Amain/arm3-049D]
}
