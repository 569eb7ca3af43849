package loop

import (
	"testing"

	"github.com/hapticd/hapticd/hw/hwtest"
	"go.uber.org/goleak"
)

// TestMain fails the tests when a goroutine outlives them: every loop,
// shard and scheduler a test starts must be stopped.
func TestMain(m *testing.M) { hwtest.Main(m, func() error { return goleak.Find() }) }
