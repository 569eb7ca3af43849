// Package hwtest holds in-memory fakes for testing code that drives devices
// without a port: ArmPort is an arm that answers the serial protocol from
// memory, with no goroutine and no allocation per exchange.
package hwtest
