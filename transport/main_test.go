package transport

import (
	"testing"

	"github.com/hapticd/hapticd/hw/hwtest"
	"go.uber.org/goleak"
)

// TestMain fails the tests when a goroutine outlives them: every service a
// test starts must be shut down, every client closed.
func TestMain(m *testing.M) { hwtest.Main(m, func() error { return goleak.Find() }) }
