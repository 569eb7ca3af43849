// Package ui is the dashboard served at /ui/ on the HTTP port: plain
// HTML, CSS and JavaScript embedded in the binary, with uPlot vendored
// under static/vendor (no build step, nothing fetched from elsewhere at
// run time). The page reads the service's own JSON routes from the same
// origin, so the browser guard that protects them protects it too.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// Handler serves the dashboard's files under /ui/. A path that names no
// file (a missing one, a folder) goes to notFound, so that it is answered
// as every route of the port answers one it does not serve, not with the
// file server's plain-text 404 or a folder listing.
func Handler(notFound http.Handler) http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		// static is embedded at build time; a failure here is a broken build.
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "dashboard files missing from this build", http.StatusInternalServerError)
		})
	}
	files := http.StripPrefix("/ui/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ui" {
			http.Redirect(w, r, "/ui/", http.StatusMovedPermanently)
			return
		}
		// A page on another origin must not frame the dashboard either.
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
		w.Header().Set("Cache-Control", "no-store")
		// "" is the page itself (the folder's index.html).
		if name := strings.TrimPrefix(r.URL.Path, "/ui/"); name != "" {
			if fi, err := fs.Stat(sub, name); err != nil || fi.IsDir() {
				notFound.ServeHTTP(w, r)
				return
			}
		}
		files.ServeHTTP(w, r)
	})
}
