package actors

import (
	"testing"

	"github.com/hapticd/hapticd/hw/hwtest"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: every
// service a test starts must be shut down and every session closed. No
// goroutine is ignored; hwtest.Main lets those that end on their own
// shortly after (protoactor's dead-letter throttle, for its 1 s interval
// after a dead letter) finish first.
func TestMain(m *testing.M) { hwtest.Main(m, func() error { return goleak.Find() }) }
