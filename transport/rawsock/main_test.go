package rawsock

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// TestMain fails the tests when a goroutine outlives them.
func TestMain(m *testing.M) { hwtest.Main(m, func() error { return goleak.Find() }) }
