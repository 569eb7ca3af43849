package effect

import (
	"testing"

	"github.com/hapticd/hapticd/hw/hwtest"
	"go.uber.org/goleak"
)

// TestMain fails the tests when a goroutine outlives them.
func TestMain(m *testing.M) { hwtest.Main(m, func() error { return goleak.Find() }) }
