package emulator

import "fmt"

// Unplug closes the device's side of the port at once, as pulling the cable
// does: the host's reads and writes fail from then on. It does not wait for
// the serving goroutine.
func (e *Emulator) Unplug() error {
	e.mu.Lock()
	fn := e.closeFn
	e.unplugged = fn != nil
	e.mu.Unlock()
	if fn == nil {
		return fmt.Errorf("hw/emulator: unplug: this emulator has no port of its own; close the io.ReadWriter given to Serve instead")
	}
	return fn()
}

// Close unplugs the device and waits for its goroutines to end.
func (e *Emulator) Close() error {
	e.mu.Lock()
	fn, serving := e.closeFn, e.serving
	e.unplugged = fn != nil
	e.mu.Unlock()
	if fn == nil {
		return nil
	}
	err := fn()
	if serving {
		<-e.done
	}
	if err != nil {
		return fmt.Errorf("hw/emulator: close: %w", err)
	}
	return nil
}
