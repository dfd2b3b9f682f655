// Package mailer is the mail protocol code of the service: SMTP delivery, the
// IMAP inbox session, MIME parsing and composing, the conversions and the
// sanitiser of message bodies, and the box that seals mail account passwords.
// It holds no SQL and knows neither the API nor the tables: package impl
// stores what it returns and answers its InputError as a "400" envelope.
package mailer

import "fmt"

// InputError is bad input of a message to send: the field at fault and the
// rule it breaks, never the value sent.
type InputError struct {
	Field  string // a field of Draft as the sending request names it, or "" for the message as a whole
	Reason string
}

func (e *InputError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

func inputError(field, format string, args ...any) *InputError {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
