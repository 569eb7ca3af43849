//go:build !unix

package discovery_test

import "testing"

// fillOutput: only Unix tests serve devices on pseudo-terminals.
func fillOutput(t *testing.T, _ string) { t.Skip("needs a Unix pseudo-terminal") }
