package serial

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/windows"
)

// portLock is a named mutex, Global\hapticd-port-COMn, whose existence
// is the lock: a Windows port is exclusive only while it is open, so
// between a lost device's close and its reopen another hapticd could
// open it. The mutex is never waited on or owned (ownership belongs to an
// OS thread, which a goroutine does not keep); Windows destroys it when
// its last handle closes, so a hapticd that dies leaves the port free.
// Other programs do not look at it: they are kept out only while the
// port is open.
type portLock struct{ mutex windows.Handle }

// lockPort creates the port's mutex; one that exists already is another
// holder's, in this process or another, in any session. Global\ needs no
// privilege for a mutex (the SeCreateGlobalPrivilege check is for file
// mappings only), so a service in session 0 and a hapticd on a user's
// desktop see each other's; a mutex another user's hapticd created is
// refused by its default access rights (ERROR_ACCESS_DENIED): busy too.
// No fallback to Local\: per session, it would let a service and a
// desktop hapticd both take the arm.
// The port itself is not opened: a missing port fails at Open.
func lockPort(path string) (portLock, error) {
	name, err := windows.UTF16PtrFromString(portMutexName(path))
	if err != nil {
		return portLock{}, fmt.Errorf("%w (%w)", ErrNotFound, err)
	}
	h, err := windows.CreateMutex(nil, false, name)
	switch {
	case err == nil:
		return portLock{mutex: h}, nil
	case errors.Is(err, windows.ERROR_ALREADY_EXISTS):
		_ = windows.CloseHandle(h)
		return portLock{}, ErrBusy
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		return portLock{}, ErrBusy
	}
	return portLock{}, fmt.Errorf("create mutex %s: %w", portMutexName(path), err)
}

// portMutexName names the port's mutex. Windows compares object names
// case-sensitively and ports case-insensitively (com3 is COM3), and a name
// may hold no backslash past its namespace.
func portMutexName(path string) string {
	port := strings.ToUpper(strings.TrimPrefix(path, `\\.\`))
	return `Global\hapticd-port-` + strings.ReplaceAll(port, `\`, "/")
}

func (l portLock) release() error { return windows.CloseHandle(l.mutex) }

// hungUp reports false: an unplugged Windows port is not told apart yet
// (goneErrnos); the driver's run of misses fails it.
func (portLock) hungUp() bool { return false }
