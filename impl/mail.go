package impl

import (
	"context"

	"github.com/crmservice/crm/gen"
)

// MailSend implements POST /mail/send.
func (s *Server) MailSend(ctx context.Context, req gen.MailSendRequestObject) (gen.MailSendResponseObject, error) {
	return nil, errNotImplemented
}
