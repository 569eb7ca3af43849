// Package hwtest holds what the tests of every package share, at the bottom
// of the house so that any of them may import it:
//
//   - in-memory fakes for testing code that drives devices without a port:
//     ArmPort is an arm that answers the serial protocol from memory, with
//     no goroutine and no allocation per exchange;
//   - Eventually and EventuallyNil, the one way a test waits for a
//     condition (polling, with a generous deadline and a message; never a
//     bare sleep or a fixed window);
//   - Main, the TestMain that fails a package's tests when a goroutine
//     outlives them;
//   - StartTestProcess, the test binary run again as a second process for
//     a test that needs one, spoken to by lines;
//   - BinaryForNobody and CommandAsNobody (unix), a test run again as a
//     user other than root, which meets the files and folders it may not
//     read or write.
//
// It imports only the standard library and hw's own packages.
package hwtest
