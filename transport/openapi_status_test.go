package transport

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
)

// rawAnswer writes request on a new connection to addr and reads the
// status and error code of the answer: for what net/http's client will not
// send (a bad HTTP version, an unknown Transfer-Encoding or Expect).
func rawAnswer(t *testing.T, addr, request string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, limitWait)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(limitWait))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	var env struct {
		Code string `json:"code"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&env)
	return resp.StatusCode, env.Code
}

// Every error status the OpenAPI document promises is one some request on
// the 3.x port really gets: the document lists 409 for no route once
// device_busy, too_many_effects and command_ignored, which only WebSocket
// frames carry, were listed among the HTTP answers. A status the document
// lists with no row here fails: either add the request that gets it, or
// the document must stop promising it. (Each operation lists the same
// error statuses: they come from the error table, and the transport's
// refusals, 413 to 505, reach every route.)
func TestOpenAPIPromisesOnlyStatusesGiven(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	doc, err := ts.schema.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	promised := map[int][]string{} // status → the operations that list it
	for p, item := range obj(doc["paths"]) {
		for method, op := range obj(item) {
			for s := range obj(obj(op)["responses"]) {
				st, err := strconv.Atoi(s)
				if err != nil {
					t.Fatalf("%s %s lists status %q", method, p, s)
				}
				if st != http.StatusOK {
					promised[st] = append(promised[st], strings.ToUpper(method)+" "+p)
				}
			}
		}
	}
	handedness := "/arm3/" + ts.armIDs[0] + "/config/handedness"
	addr := strings.TrimPrefix(ts.base, "http://")
	post := func(path, headers, body string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n" + headers + "\r\n" + body
	}
	// get answers the status and code of a request as a client sends it.
	get := func(method, url, body string, headers ...string) func(t *testing.T) (int, string) {
		return func(t *testing.T) (int, string) {
			r := ts.do(method, url, body, headers...)
			code, _ := r.env["code"].(string)
			return r.status, code
		}
	}
	raw := func(request string) func(t *testing.T) (int, string) {
		return func(t *testing.T) (int, string) { return rawAnswer(t, addr, request) }
	}
	given := map[int]struct {
		code protocol.Code
		ask  func(t *testing.T) (int, string)
	}{
		http.StatusBadRequest:                  {protocol.CodeInvalidJSON, get(http.MethodPost, ts.base+handedness, `{"preset":`)},
		http.StatusForbidden:                   {protocol.CodeForbiddenOrigin, get(http.MethodGet, ts.base+"/devices", "", "Origin", "https://elsewhere.example")},
		http.StatusNotFound:                    {protocol.CodeUnknownDevice, get(http.MethodGet, ts.base+"/arm3/no-such-arm/config/preset", "")},
		http.StatusMethodNotAllowed:            {protocol.CodeMethodNotAllowed, get(http.MethodPut, ts.base+"/devices", "")},
		http.StatusRequestEntityTooLarge:       {protocol.CodeBodyTooLarge, get(http.MethodPost, ts.base+handedness, `"`+strings.Repeat("x", maxBodyBytes)+`"`)},
		http.StatusExpectationFailed:           {protocol.CodeExpectationFailed, raw(post(handedness, "Expect: 200-ok\r\n", `"left"`))},
		http.StatusRequestHeaderFieldsTooLarge: {protocol.CodeHeadersTooLarge, raw("GET /version HTTP/1.1\r\nHost: " + addr + "\r\nX-Big: " + strings.Repeat("x", maxHeaderBytes) + "\r\n\r\n")},
		http.StatusNotImplemented:              {protocol.CodeUnsupportedTransferEncoding, raw(post(handedness, "Transfer-Encoding: gzip\r\n", `"left"`))},
		http.StatusHTTPVersionNotSupported:     {protocol.CodeUnsupportedHTTPVersion, raw("GET /version HTTP/2.1\r\nHost: " + addr + "\r\n\r\n")},
		http.StatusInternalServerError:         {protocol.CodeInternal, storeFails()},
		http.StatusServiceUnavailable:          {protocol.CodeUnavailable, overConnectionLimit()},
	}
	var statuses []int
	for st := range promised {
		statuses = append(statuses, st)
	}
	sort.Ints(statuses)
	for _, st := range statuses {
		t.Run(strconv.Itoa(st), func(t *testing.T) {
			g, ok := given[st]
			if !ok {
				t.Fatalf("the OpenAPI document promises %d (%d operations, e.g. %s), which no request here gets: add the request that does, or stop promising it",
					st, len(promised[st]), promised[st][0])
			}
			status, code := g.ask(t)
			if status != st || code != string(g.code) {
				t.Errorf("got %d %q, want %d %q", status, code, st, g.code)
			}
		})
	}
}

// storeFails asks a service whose store refuses every write to store a
// config change: 500 internal.
func storeFails() func(t *testing.T) (int, string) {
	return func(t *testing.T) (int, string) {
		ts := startService(t, serviceConfig{arms: 1, wrapStore: func(s actors.Store) actors.Store {
			return failOneStore{s, "devices/arm3-" + sim.ArmID(0)}
		}})
		r := ts.do(http.MethodPost, ts.base+"/arm3/"+ts.armIDs[0]+"/config/handedness", `"left"`)
		code, _ := r.env["code"].(string)
		return r.status, code
	}
}

// overConnectionLimit asks a service whose HTTP listener is full: 503
// unavailable.
func overConnectionLimit() func(t *testing.T) (int, string) {
	return func(t *testing.T) (int, string) {
		ts := startService(t, serviceConfig{arms: 1, maxConns: 1})
		http.DefaultClient.CloseIdleConnections()
		addr := strings.TrimPrefix(ts.base, "http://")
		held := holdOnlyPlace(t, addr)
		defer held.Close()
		return rawAnswer(t, addr, "GET /version HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	}
}
