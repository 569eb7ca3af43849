package hwtest

// JSONPath walks a value decoded from JSON into any by object keys
// (string) and array indices (int): JSONPath(frame, "arm3", 0, "state").
// It is nil where anything on the way is missing or of another kind, so a
// test can compare the result without checking each step.
func JSONPath(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k < 0 || k >= len(l) {
				return nil
			}
			v = l[k]
		default:
			return nil
		}
	}
	return v
}
