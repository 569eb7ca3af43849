package protocol

import "net/url"

// QueryValue returns the value of the query parameter name and whether it
// is given. One given twice (?limit=5&limit=500) is refused with
// invalid_value: which one the client meant is not the service's to guess,
// and taking the first answered something else than one of them asked for.
// Every route's query parameters are read through it, on both API formats,
// from the request's raw query: one that cannot be decoded (a bad escape
// such as since=3%, a ';') is refused with invalid_value, where url.URL's
// Query drops such pairs silently and a route would answer as if the
// client had not given them (a replay skipped, a selector ignored).
func QueryValue(rawQuery, name string) (v string, given bool, err *Error) {
	q, perr := url.ParseQuery(rawQuery)
	if perr != nil {
		return "", false, Errorf(CodeInvalidValue, "", "the query cannot be decoded: %v", perr)
	}
	vals, given := q[name]
	switch {
	case len(vals) > 1:
		return "", true, Errorf(CodeInvalidValue, "", "?%s= is given %d times: give it once", name, len(vals))
	case given:
		return vals[0], true, nil
	}
	return "", false, nil
}

// QueryEnvelope reads ?format= of GET /version and GET /devices: json asks
// for the {"ok", "data"} envelope, absent for the plain document (PROTOCOL
// 2.1). Any other value is refused rather than answered in a shape the
// client did not ask for.
func QueryEnvelope(rawQuery string) (bool, *Error) {
	v, given, err := QueryValue(rawQuery, "format")
	switch {
	case err != nil:
		return false, err
	case !given:
		return false, nil
	case v == "json":
		return true, nil
	}
	return false, Errorf(CodeInvalidValue, "", "format=%q is not a format: give format=json for the envelope, or no format for the plain document", v)
}
