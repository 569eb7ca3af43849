package protocol

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestDocParseAgreesWithEncodingJSON: the tape parser accepts exactly what
// encoding/json accepts (for UTF-8 input within the depth limit).
func TestDocParseAgreesWithEncodingJSON(t *testing.T) {
	inputs := []string{
		`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `1E+2`, `true`, `false`, `null`, ` {"a" : [1, 2, {"b": null}] } `,
		`"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"`, `"\ud800"`, `"\uDC00x"`,
		// Invalid.
		``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `[1 2]`, `01`, `-`, `1.`, `.5`, `+1`, `1e`, `1e+`,
		`NaN`, `Infinity`, `-Infinity`, `nul`, `tru`, `"abc`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"a\tb\"", `'a'`, `{"a":1}}`, `[1][2]`,
		`"\`, `{"a":`, `[`, `[1`, `{"a"`,
	}
	for _, in := range inputs {
		var d Doc
		err := d.Parse([]byte(in))
		if got, want := err == nil, json.Valid([]byte(in)); got != want {
			t.Errorf("Parse(%q) ok=%v, encoding/json says %v (%v)", in, got, want, err)
		}
		if err != nil && (err.Code != CodeInvalidJSON || !strings.Contains(err.Message, "byte")) {
			t.Errorf("Parse(%q): %+v", in, err)
		}
	}
	var d Doc
	if err := d.Parse([]byte("\"\xff\"")); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
	if err := d.Parse([]byte(strings.Repeat("[", 65) + strings.Repeat("]", 65))); err == nil || !strings.Contains(err.Message, "deeper") {
		t.Errorf("deep nesting: %v", err)
	}
	if err := d.Parse([]byte(strings.Repeat("[", 64) + strings.Repeat("]", 64))); err != nil {
		t.Errorf("64 levels should parse: %v", err)
	}
}

func TestDocStrings(t *testing.T) {
	for _, in := range []string{`"plain"`, `"a\"b\\c\/d"`, `"\b\f\n\r\t"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800x"`} {
		var d Doc
		if err := d.Parse([]byte(in)); err != nil {
			t.Fatal(err)
		}
		got, ok := d.Root().String()
		var want string
		if err := json.Unmarshal([]byte(in), &want); err != nil || !ok || got != want {
			t.Errorf("%s: got %q, encoding/json %q", in, got, want)
		}
	}
}

func TestValueAccessors(t *testing.T) {
	var d Doc
	if err := d.Parse([]byte(`{"a":[1,"x",true,null,{"k":2}],"a":{"dup":1},"n":1e400}`)); err != nil {
		t.Fatal(err)
	}
	root := d.Root()
	if root.Len() != 3 || root.Member("a").Kind() != KindObject || root.Member("missing").Exists() {
		t.Fatal("duplicate keys: the last one wins, as in encoding/json")
	}
	if _, ok := root.Member("n").Float(); ok {
		t.Error("1e400 is not finite")
	}
	var d2 Doc
	if err := d2.Parse([]byte(`[1,"x",true,null]`)); err != nil {
		t.Fatal(err)
	}
	kinds := []JSONKind{}
	for it := d2.Root().Elements(); it.Next(); {
		kinds = append(kinds, it.Value().Kind())
	}
	if len(kinds) != 4 || kinds[0] != KindNumber || kinds[1] != KindString || kinds[2] != KindBool || kinds[3] != KindNull || d2.Root().Len() != 4 {
		t.Fatal(kinds)
	}
	var zero Value
	if zero.Kind() != KindInvalid || zero.Exists() || zero.Len() != 0 || zero.Raw() != nil {
		t.Fatal("zero Value")
	}
}

// TestValueFloatAgreesWithStrconv: Value.Float returns the very float64
// strconv.ParseFloat does, bit for bit, on its fast path (short decimals)
// and off it (exponents, 16 and more digits, long fractions), for fixed
// cases and many random decimals.
func TestValueFloatAgreesWithStrconv(t *testing.T) {
	inputs := []string{
		"0", "-0", "1", "-1", "0.5", "-0.125", "1.5", "0.1", "0.2", "0.3", "123.456", "0.000001", "-0.0000000000001",
		"999999999999999", "9999999999999999", "9007199254740993", "0.123456789012345", "0.1234567890123456",
		"1e3", "1.5E-3", "-2e+2", "123456789012345678901234567890", "0.30000000000000004", "1e400", "-1e400", "4.9e-324",
		"1e-400", "-1e-400", "2e-324", "0e-400", "-0.000e5", "0.0", "1e-320",
	}
	rng := rand.New(rand.NewPCG(26, 2))
	for range 20000 {
		digits := 1 + rng.IntN(18)
		b := []byte{}
		if rng.IntN(2) == 0 {
			b = append(b, '-')
		}
		b = append(b, byte('1'+rng.IntN(9)))
		point := rng.IntN(digits + 1)
		if rng.IntN(3) == 0 {
			b, point = append(b[:len(b)-1], '0'), 1 // "0.xxx"
		}
		for i := 1; i < digits; i++ {
			if i == point {
				b = append(b, '.')
			}
			b = append(b, byte('0'+rng.IntN(10)))
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		var d Doc
		if err := d.Parse([]byte(in)); err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		got, ok := d.Root().Float()
		want, err := strconv.ParseFloat(in, 64)
		wantOK := err == nil && !math.IsInf(want, 0) && !underflows(in, want)
		if ok != wantOK || ok && math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("Float(%q) = %v, %v; strconv says %v (%v)", in, got, ok, want, err)
		}
	}
}

// underflows says whether strconv read the number text, not zero, as
// parsed 0 (1e-400): Value.Float refuses it as it refuses 1e400, since a
// client that sent a non-zero value never means zero.
func underflows(text string, parsed float64) bool {
	mantissa, _, _ := strings.Cut(strings.ToLower(text), "e")
	return parsed == 0 && strings.ContainsAny(mantissa, "123456789")
}

// FuzzValueFloat: for any JSON number, Value.Float agrees with
// strconv.ParseFloat bit for bit, and refuses what does not fit a float64
// (too large, or too small for any but zero).
func FuzzValueFloat(f *testing.F) {
	for _, s := range []string{"0", "-0", "0.5", "-0.125", "123456789012345", "1e5", "0.1234567890123456"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var d Doc
		if d.Parse([]byte(in)) != nil || d.Root().Kind() != KindNumber {
			return
		}
		got, ok := d.Root().Float()
		want, err := strconv.ParseFloat(strings.TrimSpace(in), 64)
		wantOK := err == nil && !math.IsInf(want, 0) && !underflows(strings.TrimSpace(in), want)
		if ok != wantOK || ok && math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("Float(%q) = %v, %v; strconv says %v (%v)", in, got, ok, want, err)
		}
	})
}

// A character the parser does not expect is named whole: a UTF-8 byte
// order mark before a message or body (Windows tools write one) was
// reported as "unexpected character 'ï'", its first byte read as Latin-1.
func TestParseNamesTheUnexpectedCharacter(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"\uFEFF{\"a\":1}", "not valid JSON at byte 0: a UTF-8 byte order mark (bytes EF BB BF, U+FEFF) is not JSON: send the JSON without it"},
		{"{\"a\":\uFEFF1}", "not valid JSON at byte 5: a UTF-8 byte order mark"},
		{"{\"a\":é}", "not valid JSON at byte 5: unexpected character 'é'"},
		{"{\"a\":x}", "not valid JSON at byte 5: unexpected character 'x'"},
	} {
		var d Doc
		err := d.Parse([]byte(tc.data))
		if err == nil || err.Code != CodeInvalidJSON || !strings.HasPrefix(err.Message, tc.want) {
			t.Errorf("%q: %v; want %q", tc.data, err, tc.want)
		}
	}
}
