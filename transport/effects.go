package transport

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/hapticd/hapticd/protocol"
)

// effects answers GET /{type}/{id}/effects: the effects the arm renders,
// as its controlling session declared them (protocol.EffectsInForce).
func (a *api) effects(c protocol.Collection) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		devs, perr := a.matchDevices(c, ps.ByName("id"))
		if perr != nil {
			writeError(w, perr)
			return
		}
		if len(devs) != 1 {
			writeError(w, protocol.Errorf(protocol.CodeAmbiguousSelector, "", "%q matches %d devices; a GET needs exactly one", ps.ByName("id"), len(devs)))
			return
		}
		v := a.svc.EffectsInForce(devs[0])
		writeData(w, &v, nil)
	}
}
