package protocol

import (
	"strings"

	"github.com/hapticd/hapticd/protocol/space"
)

// DeprecatedRoute is one deprecated HTTP route (PROTOCOL 5, reference 4.4).
// It works exactly as its replacement does: Translate turns its body into
// the replacement's body, which then goes through the replacement's path.
type DeprecatedRoute struct {
	Method, Path string // "POST", "/gravity_compensation"
	// Replacement is the route to use instead, with {type} and {id} where a
	// device goes ("/{type}/{id}/config/gravity_compensation").
	Replacement string
	// LegacyBody is an example body as clients send it.
	LegacyBody string
	Setting    SettingKey // non-zero when the replacement is a settings route
	Key        Key        // non-zero when the replacement is a device-global config route
}

// LegacyRequest is a deprecated route's request in the replacement's terms.
type LegacyRequest struct {
	DeviceID string // the device of a config route; "" for settings
	Body     []byte // the replacement's body, already validated
	// Warnings name the legacy body's members the route does not read
	// (unknown_field), as the replacement's answer would.
	Warnings []Error
}

// legacyField maps one field of a legacy body onto the replacement body.
type legacyField struct {
	from, to string // to "": the replacement takes the bare value ({"value": v} for settings)
	kind     JSONKind
}

type deprecatedRouteRow struct {
	route    DeprecatedRoute
	deviceID bool // body carries "device_id" (required)
	fields   []legacyField
}

// deprecatedRoutes is the one deprecation table for HTTP; never written.
var deprecatedRoutes = []deprecatedRouteRow{
	settingRoute("/force_scale", `{"force_scale":0.5}`, SettingForceScale,
		legacyField{"force_scale", "", KindNumber}),
	configRoute("/gravity_compensation", `{"device_id":"049D","enable":true,"gravity_scaling_factor":0.5}`, KeyGravityCompensation,
		legacyField{"enable", "enabled", KindBool}, legacyField{"gravity_scaling_factor", "scaling_factor", KindNumber}),
	configRoute("/torque_scaling", `{"device_id":"049D","enable":true}`, KeyTorqueScaling,
		legacyField{"enable", "enabled", KindBool}),
	configRoute("/device_handedness", `{"device_id":"049D","handedness":"left"}`, KeyHandedness,
		legacyField{"handedness", "handedness", KindString}),
	settingRoute("/serial_enable", `{"enable":true}`, SettingSerialEnable,
		legacyField{"enable", "", KindBool}),
	settingRoute("/experimental/features/grip_dropped_simulation_stopper", `{"enable":true}`, SettingGripHook,
		legacyField{"enable", "", KindBool}),
	settingRoute("/experimental/features/screensaver_enable", `{"enable":true}`, SettingScreensaver,
		legacyField{"enable", "", KindBool}),
}

// settingRoute is a row for a deprecated POST route replaced by the
// settings route of s, so that the replacement cannot drift from the
// setting's path.
func settingRoute(path, legacyBody string, s SettingKey, fields ...legacyField) deprecatedRouteRow {
	return deprecatedRouteRow{
		route:  DeprecatedRoute{Method: "POST", Path: path, Replacement: "/settings/" + s.Path(), LegacyBody: legacyBody, Setting: s},
		fields: fields,
	}
}

// configRoute is a row for a deprecated POST route replaced by the
// device-global config route of k; its body names the device in
// "device_id".
func configRoute(path, legacyBody string, k Key, fields ...legacyField) deprecatedRouteRow {
	return deprecatedRouteRow{
		route:    DeprecatedRoute{Method: "POST", Path: path, Replacement: "/{type}/{id}/config/" + k.Path(), LegacyBody: legacyBody, Key: k},
		deviceID: true,
		fields:   fields,
	}
}

// DeprecatedRoutes lists the deprecated HTTP routes (a copy).
func DeprecatedRoutes() []DeprecatedRoute {
	out := make([]DeprecatedRoute, len(deprecatedRoutes))
	for i, r := range deprecatedRoutes {
		out[i] = r.route
	}
	return out
}

// LookupDeprecatedRoute finds the deprecated route for method and path.
func LookupDeprecatedRoute(method, path string) (DeprecatedRoute, bool) {
	for _, r := range deprecatedRoutes {
		if r.route.Method == method && r.route.Path == path {
			return r.route, true
		}
	}
	return DeprecatedRoute{}, false
}

func (r DeprecatedRoute) row() (deprecatedRouteRow, bool) {
	for _, row := range deprecatedRoutes {
		if row.route.Path == r.Path && row.route.Method == r.Method {
			return row, true
		}
	}
	return deprecatedRouteRow{}, false
}

// Translate turns a legacy body into the replacement's device id and body,
// and validates it exactly as the replacement would. Errors name the legacy
// fields. Unknown fields are ignored, as on every HTTP route.
func (r DeprecatedRoute) Translate(body []byte) (LegacyRequest, *Error) {
	row, ok := r.row()
	if !ok {
		return LegacyRequest{}, Errorf(CodeUnknownRoute, "", "%s %s is not a deprecated route", r.Method, r.Path)
	}
	var doc Doc
	root, e := parseObject(&doc, body, r.LegacyBody)
	if e != nil {
		if e.Code != CodeInvalidJSON { // not an object: name the body, not "value"
			e.Message = "the body must be a JSON object like " + r.LegacyBody
		}
		return LegacyRequest{}, e
	}
	var req LegacyRequest
	var w bodyWarnings
	at := rootPath(r.Path)
	for it := root.Members(); it.Next(); {
		known := row.deviceID && it.KeyIs("device_id")
		for _, f := range row.fields {
			known = known || it.KeyIs(f.from)
		}
		if !known {
			w.sink().unknownField(&at, &it)
		}
	}
	if row.deviceID {
		v := root.Member("device_id")
		s, ok := v.String()
		if !ok || s == "" {
			return LegacyRequest{}, Errorf(CodeInvalidValue, "device_id",
				"%s needs \"device_id\" (a string such as \"049D\"), e.g. %s", r.Path, r.LegacyBody)
		}
		req.DeviceID = s
	}
	out := []byte{'{'}
	for i, f := range row.fields {
		v := root.Member(f.from)
		if !v.Exists() {
			return LegacyRequest{}, Errorf(CodeInvalidValue, f.from, "%s needs %q, e.g. %s", r.Path, f.from, r.LegacyBody)
		}
		if v.Kind() != f.kind {
			return LegacyRequest{}, Errorf(CodeInvalidValue, f.from, "%s must be %s, got %s", f.from, f.kind, v.Kind())
		}
		if f.to == "" {
			out = append(out, `"value":`...)
		} else {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendKey(out, f.to)
		}
		out = append(out, v.Raw()...)
	}
	req.Body = append(out, '}')
	var err *Error
	if r.Setting != 0 {
		_, err = DecodeSetting(r.Setting, req.Body)
	} else {
		_, err = DecodeEntry(r.Key, req.Body, "")
	}
	if err != nil {
		// Point at the field the client sent, not the one it was mapped to.
		for _, f := range row.fields {
			if err.Path == f.to || (f.to == "" && err.Path == "value") {
				// The message names it as the path does ("scaling_factor -3"
				// to a client that sent gravity_scaling_factor: tourmig).
				if f.to != "" && f.to != f.from && strings.HasPrefix(err.Message, f.to+" ") {
					err.Message = f.from + err.Message[len(f.to):]
				}
				err.Path = f.from
			}
		}
		return LegacyRequest{}, err
	}
	req.Warnings = w.done(r.Path)
	return req, nil
}

// LegacyField is one field a deprecated route's body must carry.
type LegacyField struct {
	Name string
	Kind JSONKind
	// To is the member of the replacement's body the value goes to; ""
	// for a setting, whose replacement takes the bare value. The value is
	// checked as the replacement checks it (its range, its names).
	To string
}

// LegacyFields lists the fields r's body must carry besides "device_id"
// (which a route replaced by a config route needs too), in table order.
func (r DeprecatedRoute) LegacyFields() []LegacyField {
	row, _ := r.row()
	out := make([]LegacyField, len(row.fields))
	for i, f := range row.fields {
		out[i] = LegacyField{Name: f.from, Kind: f.kind, To: f.to}
	}
	return out
}

// ReplacementFor is the replacement route with {type} and {id} filled in
// where known (an empty argument leaves its placeholder).
func (r DeprecatedRoute) ReplacementFor(deviceType, deviceID string) string {
	s := r.Replacement
	if deviceType != "" {
		s = strings.ReplaceAll(s, "{type}", deviceType)
	}
	if deviceID != "" {
		s = strings.ReplaceAll(s, "{id}", deviceID)
	}
	return s
}

// DeprecatedCommand is one deprecated session command (reference 4.5).
type DeprecatedCommand struct {
	Name        string // "session.set_coordinate_origin"
	Shape       string // the message as clients send it
	Replacement string // as the docs list it: with a 3.x example of the default value
	// about says what replaces the command; example3x and example30 show
	// it in each API's layout (3.0 keys devices by id), with {value} where
	// the value the command gave goes (defaultValue in the docs).
	about, example3x, example30, defaultValue string
}

func deprecatedCommand(name, shape, about, example3x, example30, defaultValue string) DeprecatedCommand {
	c := DeprecatedCommand{Name: name, Shape: shape, about: about, example3x: example3x, example30: example30, defaultValue: defaultValue}
	c.Replacement = c.ReplacementFor("3.x", "", "")
	return c
}

// exampleDeviceID is the arm a replacement names when the caller has none.
const exampleDeviceID = "049D"

// ReplacementFor is the replacement as a session of apiVersion ("3.0" or
// "3.x") sends it, with value, the command's own (the preset its origin
// maps to, the permutation; empty: the docs' example value), for the arm
// deviceID (empty: the docs' example arm).
func (c DeprecatedCommand) ReplacementFor(apiVersion, value, deviceID string) string {
	if value == "" {
		value = c.defaultValue
	}
	if deviceID == "" {
		deviceID = exampleDeviceID
	}
	example := c.example3x
	if apiVersion == "3.0" {
		example = c.example30
	}
	return c.about + ": " + strings.NewReplacer("{value}", value, "{id}", deviceID).Replace(example)
}

// Deprecated command names, as events and warnings name them.
const (
	CommandSetCoordinateOrigin = "session.set_coordinate_origin"
	CommandSetBasis            = "session.set_basis"
)

// deprecatedCommands is the one deprecation table for WebSocket commands;
// never written.
var deprecatedCommands = []DeprecatedCommand{
	deprecatedCommand(CommandSetCoordinateOrigin,
		`{"session": {"set_coordinate_origin": {"coordinate_origin": "device_base"}}}`,
		`arm3[*].configure.preset (or configure.preset on a grip device entry), per device`,
		`{"arm3": [{"device_id": "{id}", "configure": {"preset": {"preset": "{value}"}}}]}`,
		`{"arm3": {"{id}": {"configure": {"preset": {"preset": "{value}"}}}}}`,
		"arm_front"),
	deprecatedCommand(CommandSetBasis,
		`{"session": {"set_basis": {"basis": {"permutation": "XZY"}}}}`,
		`session.configure.basis with the same {"permutation"} object`,
		`{"session": {"configure": {"basis": {"permutation": "{value}"}}}}`,
		`{"session": {"configure": {"basis": {"permutation": "{value}"}}}}`,
		"XZY"),
}

// DeprecatedCommands lists the deprecated session commands (a copy).
func DeprecatedCommands() []DeprecatedCommand {
	return append([]DeprecatedCommand(nil), deprecatedCommands...)
}

// LookupDeprecatedCommand finds the deprecated session command name
// (CommandSetBasis, ...) without copying the table.
func LookupDeprecatedCommand(name string) (DeprecatedCommand, bool) {
	for _, c := range deprecatedCommands {
		if c.Name == name {
			return c, true
		}
	}
	return DeprecatedCommand{}, false
}

// coordinateOrigins maps set_coordinate_origin values to presets; never
// written.
var coordinateOrigins = [...][2]string{
	{"device_base", space.PresetArmFront},
	{"workspace_center", space.PresetArmFrontCentered},
}

// CoordinateOrigins lists the accepted set_coordinate_origin values, in
// table order (a copy).
func CoordinateOrigins() []string {
	out := make([]string, len(coordinateOrigins))
	for i, m := range coordinateOrigins {
		out[i] = m[0]
	}
	return out
}

// CoordinateOriginPreset maps a set_coordinate_origin value to its preset:
// device_base → arm_front, workspace_center → arm_front_centered.
func CoordinateOriginPreset(origin string) (string, bool) {
	for _, m := range coordinateOrigins {
		if m[0] == origin {
			return m[1], true
		}
	}
	return "", false
}

// DeprecationMarkdown is docs/clients.md's deprecation section, generated from
// the tables above so that the documentation cannot drift from the code.
func DeprecationMarkdown() string {
	var b strings.Builder
	b.WriteString("## Deprecated routes and commands\n\n")
	b.WriteString("Each still works exactly as its replacement does and also emits an event ")
	b.WriteString("(`http-route-deprecated` or `command-deprecated`). Deprecated HTTP routes are ")
	b.WriteString("planned for removal in 4.0. Deprecated routes answer `{\"ok\": true}` (with `\"warnings\"` naming the body's members the route does not read, as every POST answer does: docs/protocol.md, HTTP). ")
	b.WriteString("A body's `device_id` names the device as the replacement's `{id}` does: exactly, ")
	b.WriteString("or else regardless of case (`\"049d\"` is arm `049D`). `049D` in the examples is the reference's example id: ")
	b.WriteString("put your arm's (`GET /devices` lists them); an id no device has answers `404 unknown_device` on these routes, ")
	b.WriteString("and is only a warning (`unknown_device`) in a WebSocket message.\n\n")
	b.WriteString("| Deprecated route | Body as clients send it | Replacement |\n|---|---|---|\n")
	for _, r := range deprecatedRoutes {
		b.WriteString("| `" + r.route.Method + " " + r.route.Path + "` | `" + r.route.LegacyBody +
			"` | `" + r.route.Method + " " + r.route.Replacement + "` |\n")
	}
	b.WriteString("\n| Deprecated command | Shape | Replacement |\n|---|---|---|\n")
	for _, c := range deprecatedCommands {
		b.WriteString("| `" + c.Name + "` | `" + c.Shape + "` | " + markdownCode(c.Replacement) + " |\n")
	}
	b.WriteString("\n| `coordinate_origin` | Preset |\n|---|---|\n")
	for _, m := range coordinateOrigins {
		b.WriteString("| `" + m[0] + "` | `" + m[1] + "` |\n")
	}
	b.WriteString("\nUnknown `coordinate_origin` values are errors.\n")
	return b.String()
}

// markdownCode quotes the code parts of a replacement text: the part before
// the first space and the example after ": {".
func markdownCode(s string) string {
	head, rest, ok := strings.Cut(s, " ")
	if !ok {
		return "`" + s + "`"
	}
	if i := strings.Index(rest, ": {"); i >= 0 {
		return "`" + head + "` " + rest[:i] + ": `" + rest[i+2:] + "`"
	}
	return "`" + head + "` " + rest
}
