package mailer_test

import (
	"strings"
	"testing"

	"github.com/crmservice/crm/impl/mailer"
)

func TestHTMLToText(t *testing.T) {
	for _, tc := range []struct{ name, html, want string }{
		{"paragraphs and line breaks", "<p>Hello,<br>world</p><p>Second</p>", "Hello,\nworld\n\nSecond"},
		{"white space collapsed", "<div>  a \n\t b  </div>   <div>c</div>", "a b\nc"},
		{"lists", "<p>Items:</p><ul><li>one</li><li>two <b>bold</b></li></ul>after", "Items:\n\n- one\n- two bold\n\nafter"},
		{"entities", "<p>5 &lt; 6 &amp; caf&eacute;</p>", "5 < 6 & café"},
		{"scripts, styles and titles are not text", "<head><title>T</title><style>p{}</style></head><script>x()</script><p>shown</p>", "shown"},
		{"links show their target", `<a href="https://x.example/a">the offer</a> and <a href="https://x.example/">https://x.example/</a>`,
			"the offer <https://x.example/a> and https://x.example/"},
		{"mail links", `<a href="mailto:a@x.example">a@x.example</a>, <a href="mailto:a@x.example">write</a>`, "a@x.example, write <mailto:a@x.example>"},
		{"unsafe links are dropped", `<a href="javascript:x()">click</a>`, "click"},
		{"preformatted text kept", "<pre>a\n  b</pre><p>c</p>", "a\n  b\n\nc"},
		{"images by their alternative text", `<p>Logo: <img src="x.png" alt="ACME"></p>`, "Logo: ACME"},
		{"table cells", "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>", "a b\nc"},
		{"rule", "a<hr>b", "a\n\n----\n\nb"},
		{"plain text passes", "just text", "just text"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mailer.HTMLToText(tc.html); got != tc.want {
				t.Errorf("HTMLToText(%q)\n= %q\nwant %q", tc.html, got, tc.want)
			}
		})
	}
}

func TestSanitizeHTML(t *testing.T) {
	for _, tc := range []struct{ name, html, want string }{
		{"formatting kept", `<p align="center">a <b>b</b> <i>c</i></p>`, `<p align="center">a <b>b</b> <i>c</i></p>`},
		{"scripts dropped with their content", `<p>a<script>alert(1)</script>b</p>`, `<p>ab</p>`},
		{"event handlers and styles dropped", `<p onclick="x()" style="background:url(x)" class="c">t</p>`, `<p>t</p>`},
		{"javascript links lose their target", `<a href="javascript:x()">t</a><a href=" JaVaScRiPt:x()">u</a>`, `<a>t</a><a>u</a>`},
		{"web links kept", `<a href="https://x.example/?a=1&amp;b=2" target="_blank">t</a>`, `<a href="https://x.example/?a=1&amp;b=2">t</a>`},
		{"images become their alternative text", `<img src="https://track.example/p.gif" alt="a <b>">`, `a &lt;b&gt;`},
		{"frames, objects, forms dropped", `<iframe src="x"></iframe><object data="x"><param name="a"></object><form><input name="q"><textarea>t</textarea></form>ok`, `ok`},
		{"svg dropped", `<svg onload="x()"><script>x()</script><text>t</text></svg>ok`, `ok`},
		{"comments dropped", `<!--[if IE]><script>x()</script><![endif]-->ok`, `ok`},
		{"unknown tags dropped, text kept", `<html><body><custom-tag>text</custom-tag></body></html>`, `text`},
		{"unclosed tags closed", `<div><b>bold`, `<div><b>bold</b></div>`},
		{"stray end tags ignored", `</div>a</b>`, `a`},
		{"misnested tags closed in order", `<b><i>x</b>y</i>`, `<b><i>x</i></b>y`},
		{"text escaped", `1 < 2 &amp; "q"`, `1 &lt; 2 &amp; &#34;q&#34;`},
		{"attribute values escaped", `<td title='"><script>x()</script>'>t</td>`, `<td title="&#34;&gt;&lt;script&gt;x()&lt;/script&gt;">t</td>`},
		{"void elements", `a<br/>b<hr>c`, `a<br>b<hr>c`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mailer.Sanitize(tc.html)
			if got != tc.want {
				t.Errorf("Sanitize(%q)\n= %q\nwant %q", tc.html, got, tc.want)
			}
			if l := strings.ToLower(got); strings.Contains(l, "<script") || strings.Contains(l, "javascript:") || strings.Contains(l, " on") {
				t.Errorf("unsafe output %q", got)
			}
		})
	}
}

func TestTextToHTML(t *testing.T) {
	got := mailer.TextToHTML("Hello <b>,\r\nline two\n\n\n\nNext & last  \n")
	want := "<p>Hello &lt;b&gt;,<br>\nline two</p>\n<p>Next &amp; last</p>"
	if got != want {
		t.Errorf("TextToHTML = %q, want %q", got, want)
	}
}

func TestPreview(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"white space collapsed", "  a\n\n b\tc  ", "a b c"},
		{"255 characters of 300", strings.Repeat("ž", 300), strings.Repeat("ž", 255)},
		{"exactly 255", strings.Repeat("a", 255), strings.Repeat("a", 255)},
		{"cut after collapsing", strings.Repeat("a ", 200), strings.TrimSpace(strings.Repeat("a ", 128))},
		{"bytes that are not UTF-8", "a\xffb", "a\uFFFDb"},
		{"empty", " \n ", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mailer.Preview(tc.text); got != tc.want {
				t.Errorf("Preview = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTruncateRunes(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"}, {"abc", 3, "abc"}, {"abc", 2, "ab"}, {"ābč", 2, "āb"}, {"ābč", 0, ""}, {"", 1, ""},
		{strings.Repeat("ā", 10), 9, strings.Repeat("ā", 9)},
	} {
		if got := mailer.TruncateRunes(tc.s, tc.n); got != tc.want {
			t.Errorf("TruncateRunes(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
