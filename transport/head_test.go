package transport

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/protocol"
	v30 "github.com/hapticd/hapticd/protocol/v30"
)

// Every GET route answers HEAD as a GET without its body (RFC 9110 9.3.2):
// a load balancer's probe of "/", or a client checking a route, gets the
// GET's status and content type, not a 405. The test walks both formats'
// route tables and calls each GET route on its port with both methods.
func TestGetRoutesAnswerHead(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	c := ts.dial(t, ts.wsURL())
	sid := itoa(int(num(c.expect()["session_id"])))
	formats := []struct {
		name, base string
		api        *api
	}{
		{"3.x", ts.base, &api{svc: ts.svc, codec: protocol.Codec{}, servesSchema: true}},
		{"3.0", ts.legacy, &api{svc: ts.svc, codec: v30.Codec{}, prefix: protocol.LegacyRoutePrefix}},
	}
	for _, f := range formats {
		// "/" and the family selectors' config routes, which no route
		// table lists (notFound serves them).
		paths := []string{"/", f.api.prefix + "/" + protocol.FamilySelector(protocol.TypeArm) + "/0/config/preset"}
		for _, rt := range f.api.routes() {
			if rt.method == http.MethodGet && rt.path != "/" {
				paths = append(paths, f.api.prefix+rt.path)
			}
		}
		for _, p := range paths {
			target := strings.Replace(p, ":id", "0", 1)
			target = strings.Replace(target, ":name", "config", 1)
			if strings.Contains(target, "/config/") {
				target += "?session=" + sid
			}
			t.Run(f.name+" "+target, func(t *testing.T) {
				get := headOrGet(t, http.MethodGet, f.base+target)
				head := headOrGet(t, http.MethodHead, f.base+target)
				if head.status != get.status || head.contentType != get.contentType {
					t.Fatalf("HEAD answered %d %q, GET %d %q", head.status, head.contentType, get.status, get.contentType)
				}
				if head.status == http.StatusMethodNotAllowed {
					t.Fatalf("HEAD and GET both 405: %s", get.body)
				}
				if len(head.body) != 0 {
					t.Fatalf("HEAD answered a body: %q", head.body)
				}
			})
		}
	}
}

type headOrGetAnswer struct {
	status      int
	contentType string
	body        []byte
}

func headOrGet(t *testing.T, method, url string) headOrGetAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, url, err)
	}
	return headOrGetAnswer{resp.StatusCode, resp.Header.Get("Content-Type"), b}
}
