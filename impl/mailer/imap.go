package mailer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"slices"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-message"
)

// Inbox is a logged-in IMAP session with the INBOX selected read-only, so
// that reading marks nothing as read.
type Inbox struct {
	c *imapclient.Client
	// UIDValidity is the INBOX's UIDVALIDITY: UIDs seen under another value
	// name other messages.
	UIDValidity uint32
	empty       bool
}

// OpenInbox connects to srv, logs in and selects INBOX read-only. The
// session ends when ctx ends; Close it when done.
func (d *Dialer) OpenInbox(ctx context.Context, srv Server) (*Inbox, error) {
	if ExposesPassword(srv.Security, srv.Host) {
		return nil, errors.New("the password would cross the network unencrypted (imap_security none)")
	}
	conn, err := d.dial(ctx, srv)
	if err != nil {
		return nil, err
	}
	opts := &imapclient.Options{
		TLSConfig:   d.tlsConfig(srv.Host),
		WordDecoder: &mime.WordDecoder{CharsetReader: message.CharsetReader},
	}
	var c *imapclient.Client
	switch srv.Security {
	case "tls":
		c = imapclient.New(tls.Client(conn, opts.TLSConfig), opts)
	case "starttls":
		if c, err = imapclient.NewStartTLS(conn, opts); err != nil {
			conn.Close()
			return nil, fmt.Errorf("STARTTLS: %w", err)
		}
	default:
		c = imapclient.New(conn, opts)
	}
	in := &Inbox{c: c}
	if err := c.Login(srv.Login, srv.Password).Wait(); err != nil {
		in.Close()
		return nil, fmt.Errorf("login: %w", err)
	}
	sel, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("select INBOX: %w", err)
	}
	in.UIDValidity, in.empty = sel.UIDValidity, sel.NumMessages == 0
	return in, nil
}

// Close ends the session and its connection.
func (in *Inbox) Close() error { return in.c.Close() }

// UIDsAbove lists the UIDs of the INBOX's messages above last, in order.
func (in *Inbox) UIDsAbove(last uint32) ([]uint32, error) {
	if in.empty {
		return nil, nil
	}
	// "UID n:*" also answers the highest message when it is below n.
	metas, err := in.c.Fetch(imap.UIDSet{{Start: imap.UID(last) + 1, Stop: 0}}, &imap.FetchOptions{UID: true}).Collect()
	if err != nil {
		return nil, fmt.Errorf("list new messages: %w", err)
	}
	var uids []uint32
	for _, m := range metas {
		if uint32(m.UID) > last {
			uids = append(uids, uint32(m.UID))
		}
	}
	slices.Sort(uids)
	return uids, nil
}

// Fetched is one message as the IMAP server gave it.
type Fetched struct {
	UID     uint32
	Arrived time.Time // the server's INTERNALDATE
	Raw     []byte    // the whole message, or its header only when HeaderOnly
	// HeaderOnly tells a message larger than the fetch limit: its body was not
	// fetched, and Attachment comes from its body structure.
	HeaderOnly bool
	Attachment bool
}

// Fetch reads the messages uids in UID order: whole, or their header and body
// structure when they are larger than maxSize bytes.
func (in *Inbox) Fetch(uids []uint32, maxSize int64) ([]Fetched, error) {
	set := func(uids []uint32) imap.UIDSet {
		out := make([]imap.UID, len(uids))
		for i, u := range uids {
			out[i] = imap.UID(u)
		}
		return imap.UIDSetNum(out...)
	}
	sizes, err := collectFetch(in.c.Fetch(set(uids), &imap.FetchOptions{UID: true, RFC822Size: true}))
	if err != nil {
		return nil, fmt.Errorf("fetch sizes: %w", err)
	}
	var small, large []uint32
	for _, m := range sizes {
		if m.size > maxSize {
			large = append(large, uint32(m.uid))
		} else {
			small = append(small, uint32(m.uid))
		}
	}
	var out []Fetched
	if len(small) > 0 {
		msgs, err := collectFetch(in.c.Fetch(set(small), &imap.FetchOptions{
			UID: true, InternalDate: true, BodySection: []*imap.FetchItemBodySection{{Peek: true}},
		}))
		if err != nil {
			return nil, fmt.Errorf("fetch messages: %w", err)
		}
		for _, m := range msgs {
			out = append(out, Fetched{UID: uint32(m.uid), Arrived: m.internalDate, Raw: m.body})
		}
	}
	if len(large) > 0 {
		msgs, err := collectFetch(in.c.Fetch(set(large), &imap.FetchOptions{
			UID: true, InternalDate: true, BodyStructure: &imap.FetchItemBodyStructure{Extended: true},
			BodySection: []*imap.FetchItemBodySection{{Specifier: imap.PartSpecifierHeader, Peek: true}},
		}))
		if err != nil {
			return nil, fmt.Errorf("fetch message headers: %w", err)
		}
		for _, m := range msgs {
			out = append(out, Fetched{UID: uint32(m.uid), Arrived: m.internalDate, Raw: m.body,
				HeaderOnly: true, Attachment: hasAttachment(m.bodyStructure)})
		}
	}
	slices.SortFunc(out, func(a, b Fetched) int { return int(a.UID) - int(b.UID) })
	return out, nil
}

// fetchItem is one message of a FETCH reply (of a request for at most one body section).
type fetchItem struct {
	uid           imap.UID
	size          int64
	internalDate  time.Time
	bodyStructure imap.BodyStructure
	body          []byte
}

// collectFetch reads the reply of a FETCH. Unlike FetchCommand.Collect it stops
// at the first failed read and never reads on: once a body read has failed
// (the connection dropped), the client's own reader goroutine reads the
// connection again, and reading the body further would race with it (go-imap
// v2 beta). The caller then closes the client.
func collectFetch(cmd *imapclient.FetchCommand) ([]fetchItem, error) {
	var out []fetchItem
	for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
		var it fetchItem
		for item := msg.Next(); item != nil; item = msg.Next() {
			switch d := item.(type) {
			case imapclient.FetchItemDataUID:
				it.uid = d.UID
			case imapclient.FetchItemDataRFC822Size:
				it.size = d.Size
			case imapclient.FetchItemDataInternalDate:
				it.internalDate = d.Time
			case imapclient.FetchItemDataBodyStructure:
				it.bodyStructure = d.BodyStructure
			case imapclient.FetchItemDataBodySection:
				if d.Literal == nil {
					continue
				}
				b, err := io.ReadAll(d.Literal)
				if err == nil && int64(len(b)) != d.Literal.Size() {
					err = io.ErrUnexpectedEOF // a cut connection ends a body early
				}
				if err != nil {
					return nil, err
				}
				it.body = b
			}
		}
		out = append(out, it)
	}
	return out, cmd.Close()
}

// hasAttachment applies the rule of go-message's reader to a body structure: a
// part is an attachment unless it is text or marked inline.
func hasAttachment(bs imap.BodyStructure) bool {
	found := false
	if bs == nil {
		return false
	}
	bs.Walk(func(_ []int, part imap.BodyStructure) bool {
		single, ok := part.(*imap.BodyStructureSinglePart)
		if !ok {
			return true
		}
		disp := ""
		if d := single.Disposition(); d != nil {
			disp = strings.ToLower(d.Value)
		}
		if disp == "attachment" || disp != "inline" && !strings.HasPrefix(single.MediaType(), "text/") {
			found = true
		}
		return false
	})
	return found
}
