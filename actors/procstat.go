package actors

import "runtime/metrics"

// runtimeMappedBytes is the memory the Go runtime has mapped and not
// released: the resident set's best estimate where the OS gives none.
func runtimeMappedBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 || sample[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64() - sample[1].Value.Uint64()
}
