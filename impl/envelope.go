package impl

import (
	"encoding/json"
	"net/http"

	"github.com/crmservice/crm/gen"
)

// Every reply of the server is an envelope (openapi.yaml, Envelope) built here
// and written by writeEnvelope; failures go through writeError (errors.go).

// envelope builds the reply envelope; every reply of the server goes through it.
func envelope(status gen.EnvelopeStatus, code *string, msg string, value string) gen.Envelope {
	return gen.Envelope{Status: status, Error: &msg, Code: code, Value: value}
}

// success is the envelope of a successful single-record operation.
func success(value string) gen.Envelope {
	return envelope(gen.StatusSuccess, nil, "", value)
}

// successList is the envelope of a list: rows in total, the page served and its size.
func successList(value string, rows, page, perPage int) gen.Envelope {
	env := success(value)
	env.Rows, env.Page = rows, page
	if rows > 0 {
		env.Pages = (rows + perPage - 1) / perPage
	}
	return env
}

// quickListEnvelope is the envelope of a list without paging: every row on
// one page.
func quickListEnvelope(out listResult) gen.Envelope {
	return successList(out.Value, out.Rows, quickPage(out.Rows), out.Rows)
}

// writeEnvelope writes env as the whole reply with the given HTTP status.
func writeEnvelope(w http.ResponseWriter, httpStatus int, env gen.Envelope) {
	body, err := json.Marshal(env)
	if err != nil { // cannot happen: the envelope holds strings and ints only
		http.Error(w, `{"status":"error","error":"internal error","code":"500","rows":0,"pages":0,"page":0,"value":""}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(httpStatus)
	_, _ = w.Write(append(body, '\n'))
}
