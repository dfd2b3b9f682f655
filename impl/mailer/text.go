package mailer

import (
	"html"
	"strings"

	nethtml "golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The conversions between the HTML bodies the mail list shows and the text of
// messages: the plain-text alternative of a sent message, the HTML of a received
// plain-text message, the safe HTML of a received HTML message, and the
// 255-character preview (small_part_of_body).

// PreviewLength is the interface's limit of small_part_of_body: "first 255
// characters of the content".
const PreviewLength = 255

// Preview is the first PreviewLength characters of text with every run of
// white space made one space; bytes that are not UTF-8 become U+FFFD.
func Preview(text string) string {
	// The preview needs the first PreviewLength words at most: the rest of a
	// large text is not split (each word is at least one character).
	var words []string
	for w := range strings.FieldsSeq(text) {
		if len(words) == PreviewLength {
			break
		}
		words = append(words, w)
	}
	return TruncateRunes(strings.ToValidUTF8(strings.Join(words, " "), "\uFFFD"), PreviewLength)
}

// TruncateRunes cuts s to at most n characters (runes).
func TruncateRunes(s string, n int) string {
	if len(s) <= n { // n bytes hold at least n runes
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// textBuilder writes text while collapsing white space the way a browser does,
// with the line breaks that block elements ask for.
type textBuilder struct {
	sb       strings.Builder
	space    bool // a space is due before the next word
	newlines int  // line breaks due before the next word (at most 2)
}

func (b *textBuilder) breakLine(n int) {
	b.newlines = max(b.newlines, n)
}

func (b *textBuilder) flush() {
	switch {
	case b.sb.Len() == 0:
	case b.newlines > 0:
		b.sb.WriteString(strings.Repeat("\n", b.newlines))
	case b.space:
		b.sb.WriteByte(' ')
	}
	b.space, b.newlines = false, 0
}

// words writes text with its white space collapsed.
func (b *textBuilder) words(text string) {
	if text == "" {
		return
	}
	if isSpace(text[0]) {
		b.space = true
	}
	first := true
	for w := range strings.FieldsSeq(text) { // no slice of the words: a large body makes many
		if !first {
			b.space = true
		}
		first = false
		b.flush()
		b.sb.WriteString(w)
	}
	if isSpace(text[len(text)-1]) {
		b.space = true
	}
}

// verbatim writes text as it is (inside <pre>).
func (b *textBuilder) verbatim(text string) {
	if text == "" {
		return
	}
	b.flush()
	b.sb.WriteString(text)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// HTMLToText derives the plain text of an HTML body: the text a reader sees,
// paragraphs separated by a blank line, list items on lines of their own
// starting with "- ", and the target of a link after its text when the two differ.
func HTMLToText(src string) string {
	z := nethtml.NewTokenizer(strings.NewReader(src))
	var b textBuilder
	b.sb.Grow(len(src) / 2) // the text is shorter than its HTML: at most one growth
	skip, pre := 0, 0
	type anchor struct {
		href  string
		start int
	}
	var anchors []anchor
	for {
		tt := z.Next()
		switch tt {
		case nethtml.ErrorToken:
			return strings.TrimSpace(b.sb.String())
		case nethtml.TextToken:
			switch {
			case skip > 0:
			case pre > 0:
				b.verbatim(string(z.Text()))
			default:
				b.words(string(z.Text()))
			}
		case nethtml.StartTagToken, nethtml.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			attrs := map[string]string{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				attrs[string(k)] = string(v)
			}
			switch {
			case textSkipped[a]:
				if tt == nethtml.StartTagToken {
					skip++
				}
			case a == atom.Br:
				b.newlines = min(b.newlines+1, 2)
				if b.sb.Len() == 0 {
					b.newlines = 0
				}
			case a == atom.Li:
				b.breakLine(1)
				b.flush()
				b.sb.WriteString("- ")
			case a == atom.Td || a == atom.Th:
				b.space = true
			case a == atom.Pre:
				b.breakLine(2)
				pre++
			case a == atom.Hr:
				b.breakLine(2)
				b.flush()
				b.sb.WriteString("----")
				b.breakLine(2)
			case a == atom.Img:
				b.words(attrs["alt"])
			case a == atom.A:
				anchors = append(anchors, anchor{attrs["href"], b.sb.Len()})
			case textBlocks[a]:
				b.breakLine(textBlockBreak(a))
			}
		case nethtml.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case textSkipped[a]:
				skip = max(skip-1, 0)
			case a == atom.Pre:
				pre = max(pre-1, 0)
				b.breakLine(2)
			case a == atom.A && len(anchors) > 0:
				an := anchors[len(anchors)-1]
				anchors = anchors[:len(anchors)-1]
				shown := strings.TrimSpace(b.sb.String()[min(an.start, b.sb.Len()):])
				target := strings.TrimPrefix(an.href, "mailto:")
				if safeLink(an.href) && shown != target && shown != an.href {
					b.words(" <" + an.href + ">")
				}
			case textBlocks[a]:
				b.breakLine(textBlockBreak(a))
			}
		}
	}
}

// textSkipped are the elements whose content is not text a reader sees.
var textSkipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Title: true, atom.Template: true, atom.Noscript: true,
	atom.Iframe: true, atom.Object: true, atom.Svg: true, atom.Math: true, atom.Textarea: true,
	atom.Select: true, atom.Applet: true, atom.Frameset: true, atom.Noembed: true, atom.Noframes: true,
	atom.Xmp: true,
}

// textBlocks are the elements that start a line of their own.
var textBlocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true,
	atom.H5: true, atom.H6: true, atom.Ul: true, atom.Ol: true, atom.Table: true, atom.Tr: true,
	atom.Blockquote: true, atom.Section: true, atom.Article: true, atom.Header: true,
	atom.Footer: true, atom.Address: true, atom.Dl: true, atom.Dt: true, atom.Dd: true,
	atom.Center: true, atom.Body: true,
}

// textBlockBreak is 1 for blocks that start a new line, 2 for those that start a
// paragraph.
func textBlockBreak(a atom.Atom) int {
	switch a {
	case atom.Div, atom.Tr, atom.Dt, atom.Dd, atom.Center, atom.Body:
		return 1
	}
	return 2
}

// safeLink reports whether href may stay a link: web and mail addresses only,
// never javascript:, data: or the like.
func safeLink(href string) bool {
	h := strings.ToLower(strings.TrimSpace(href))
	return strings.HasPrefix(h, "http://") || strings.HasPrefix(h, "https://") || strings.HasPrefix(h, "mailto:")
}

// TextToHTML turns a plain-text body into HTML: every character escaped,
// paragraphs (separated by blank lines) in <p>, line breaks as <br>.
func TextToHTML(text string) string {
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	var out []string
	for _, para := range strings.Split(text, "\n\n") {
		para = strings.Trim(para, "\n")
		if strings.TrimSpace(para) == "" {
			continue
		}
		lines := strings.Split(para, "\n")
		for i, l := range lines {
			lines[i] = html.EscapeString(strings.TrimRight(l, " \t"))
		}
		out = append(out, "<p>"+strings.Join(lines, "<br>\n")+"</p>")
	}
	return strings.Join(out, "\n")
}

// Sanitize keeps of a received HTML body only what cannot run or load
// anything: an allowlist of formatting elements with an allowlist of
// attributes, links to web and mail addresses only, images replaced by their
// alternative text, no styles, scripts, frames, forms or comments; every tag it
// opens is closed, so the result can be embedded in a page. The result is
// UTF-8, and sanitising it again changes nothing.
func Sanitize(src string) string {
	z := nethtml.NewTokenizer(strings.NewReader(strings.ToValidUTF8(src, "\uFFFD")))
	var out strings.Builder
	var open []atom.Atom
	skip := 0
	for {
		tt := z.Next()
		switch tt {
		case nethtml.ErrorToken:
			for i := len(open) - 1; i >= 0; i-- {
				out.WriteString("</" + open[i].String() + ">")
			}
			return out.String()
		case nethtml.TextToken:
			if skip == 0 {
				out.WriteString(html.EscapeString(string(z.Text())))
			}
		case nethtml.StartTagToken, nethtml.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			var attrs [][2]string
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				attrs = append(attrs, [2]string{string(k), string(v)})
			}
			if textSkipped[a] {
				if tt == nethtml.StartTagToken {
					skip++
				}
				continue
			}
			if skip > 0 {
				continue
			}
			if a == atom.Img {
				for _, kv := range attrs {
					if kv[0] == "alt" {
						out.WriteString(html.EscapeString(kv[1]))
					}
				}
				continue
			}
			if !allowedTags[a] {
				continue
			}
			out.WriteString("<" + a.String())
			for _, kv := range attrs {
				if allowedAttr(a, kv[0], kv[1]) {
					out.WriteString(" " + kv[0] + `="` + html.EscapeString(kv[1]) + `"`)
				}
			}
			out.WriteString(">")
			if !voidTags[a] {
				open = append(open, a)
			}
		case nethtml.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if textSkipped[a] {
				skip = max(skip-1, 0)
				continue
			}
			if skip > 0 || !allowedTags[a] || voidTags[a] {
				continue
			}
			for i := len(open) - 1; i >= 0; i-- {
				if open[i] == a {
					for j := len(open) - 1; j >= i; j-- {
						out.WriteString("</" + open[j].String() + ">")
					}
					open = open[:i]
					break
				}
			}
		}
	}
}

// allowedTags are the elements a sanitized body keeps.
var allowedTags = map[atom.Atom]bool{
	atom.A: true, atom.B: true, atom.I: true, atom.U: true, atom.S: true, atom.Em: true, atom.Strong: true,
	atom.Small: true, atom.Big: true, atom.Sub: true, atom.Sup: true, atom.Strike: true, atom.Font: true,
	atom.Span: true, atom.P: true, atom.Br: true, atom.Hr: true, atom.Div: true, atom.Center: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Ul: true, atom.Ol: true, atom.Li: true, atom.Dl: true, atom.Dt: true, atom.Dd: true,
	atom.Table: true, atom.Thead: true, atom.Tbody: true, atom.Tfoot: true, atom.Tr: true, atom.Td: true,
	atom.Th: true, atom.Caption: true, atom.Blockquote: true, atom.Pre: true, atom.Code: true,
	atom.Tt: true, atom.Q: true, atom.Cite: true, atom.Abbr: true, atom.Address: true,
}

var voidTags = map[atom.Atom]bool{atom.Br: true, atom.Hr: true}

// allowedAttr reports whether attribute key=value of element a is kept.
func allowedAttr(a atom.Atom, key, value string) bool {
	switch key {
	case "href":
		return a == atom.A && safeLink(value)
	case "title", "dir", "lang", "align", "valign", "colspan", "rowspan", "width", "height",
		"border", "cellpadding", "cellspacing", "bgcolor":
		return true
	case "color", "face", "size":
		return a == atom.Font
	}
	return false
}
