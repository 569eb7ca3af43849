package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"
)

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// FromType is the schema of what encoding/json writes for a value of type
// t, read from the type itself (json tags, omitempty, embedded structs), so
// that documents the service encodes from Go structs (GET /stats, GET
// /sessions, the migration report) are described without being written a
// second time. Objects admit no other members. Nil slices and maps encode
// as null, so slices and maps without omitempty admit null; pointers admit
// null. json.RawMessage and interfaces admit anything.
func FromType(t reflect.Type) Schema {
	switch {
	case t == timeType:
		return Schema{"type": "string", "format": "date-time"}
	case t == rawType:
		return Schema{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return Schema{"anyOf": []Schema{FromType(t.Elem()), {"type": "null"}}}
	case reflect.Struct:
		props, required := Schema{}, []string{}
		addFields(t, props, &required)
		return Schema{"type": "object", "properties": props, "required": required, "additionalProperties": false}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return Schema{"type": "string", "contentEncoding": "base64"}
		}
		s := Schema{"type": []string{"array", "null"}, "items": FromType(t.Elem())}
		if t.Kind() == reflect.Array {
			s["type"] = "array"
			s["minItems"], s["maxItems"] = t.Len(), t.Len()
		}
		return s
	case reflect.Map:
		return Schema{"type": []string{"object", "null"}, "additionalProperties": FromType(t.Elem())}
	case reflect.String:
		return Schema{"type": "string"}
	case reflect.Bool:
		return Schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return Schema{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return Schema{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return Schema{"type": "number"}
	}
	return Schema{}
}

// addFields adds the JSON members of struct t, flattening embedded structs
// as encoding/json does.
func addFields(t reflect.Type, props Schema, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(ft, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := FromType(f.Type)
		omit := false
		for _, o := range strings.Split(opts, ",") {
			omit = omit || o == "omitempty" || o == "omitzero"
		}
		if omit {
			// omitempty leaves out nil slices and maps: when present, they
			// are not null.
			if ty, ok := s["type"].([]string); ok && len(ty) == 2 && ty[1] == "null" {
				s["type"] = ty[0]
			}
		} else {
			*required = append(*required, name)
		}
		props[name] = s
	}
}
