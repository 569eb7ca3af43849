//go:build !linux && !windows

package loop

import "time"

func newMonoOrigin() monoBase { return monoBase{t: time.Now(), ns: 1} }
