// Package protocoltest holds test helpers for what the protocol's decoders
// promise.
package protocoltest

import (
	"fmt"
	"reflect"
	"unsafe"
)

// BufferAliases names every string or slice reachable from v whose bytes lie
// in buf's array (up to its capacity): what a decoded value would still
// read from its input once the transport reuses the buffer for the next
// message, its own client's or another's. It follows pointers, interfaces,
// slices up to their capacity, arrays, maps and structs, unexported fields
// included; a pointer into the array is named too.
func BufferAliases(buf []byte, v any) []string {
	b := buf[:cap(buf)]
	w := aliasWalk{seen: map[uintptr]bool{}}
	if len(b) > 0 {
		w.lo = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		w.hi = w.lo + uintptr(len(b))
	}
	w.walk("v", reflect.ValueOf(v))
	return w.found
}

type aliasWalk struct {
	lo, hi uintptr
	seen   map[uintptr]bool
	found  []string
}

func (w *aliasWalk) in(p uintptr, n int) bool {
	return n > 0 && p != 0 && p < w.hi && p+uintptr(n) > w.lo
}

func (w *aliasWalk) walk(path string, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if w.in(uintptr(unsafe.Pointer(unsafe.StringData(s))), len(s)) {
			w.found = append(w.found, fmt.Sprintf("%s = %q", path, s))
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		if w.in(v.Pointer(), v.Cap()*int(v.Type().Elem().Size())) {
			w.found = append(w.found, fmt.Sprintf("%s (a slice, len %d cap %d)", path, v.Len(), v.Cap()))
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			w.walk(fmt.Sprintf("%s[%d]", path, i), v.Index(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			w.walk(fmt.Sprintf("%s[%d]", path, i), v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			w.walk(path+"."+v.Type().Field(i).Name, v.Field(i))
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		p := v.Pointer()
		if w.in(p, 1) {
			w.found = append(w.found, path+" (a pointer into the buffer)")
		}
		if w.seen[p] {
			return
		}
		w.seen[p] = true
		w.walk(path, v.Elem())
	case reflect.Interface:
		if !v.IsNil() {
			w.walk(path+"<"+v.Elem().Type().String()+">", v.Elem())
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			w.walk(path+"{key}", it.Key())
			w.walk(path+"{value}", it.Value())
		}
	}
}
