package impl

import (
	"context"
	"time"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/gen"
)

// Healthz implements GET /healthz: the process serves HTTP.
func (s *Server) Healthz(ctx context.Context, req gen.HealthzRequestObject) (gen.HealthzResponseObject, error) {
	return gen.Healthz200JSONResponse(success(`{"status":"ok"}`)), nil
}

// Readyz implements GET /readyz: the database answers within 800 ms (so that
// the reply comes within the promised second) and has the schema this build
// expects.
func (s *Server) Readyz(ctx context.Context, req gen.ReadyzRequestObject) (gen.ReadyzResponseObject, error) {
	ctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
	defer cancel()
	if err := db.CheckSchema(ctx, s.db(ctx)); err != nil {
		s.log.WarnContext(ctx, "not ready", "err", err)
		code := CodeNotReady
		return gen.Readyz503JSONResponse(envelope(gen.StatusError, &code, "database unavailable or schema not current", "")), nil
	}
	return gen.Readyz200JSONResponse(success(`{"status":"ok"}`)), nil
}
