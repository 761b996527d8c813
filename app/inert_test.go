package app

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	nethtml "golang.org/x/net/html"
)

var own = IssueRef{Repo: "octo/hello", Number: 7}

func TestInert(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"closes another issue", "Fixes #12", "Fixes\u200d #12"},
		{"closes its own issue", "Fixes #7", "Fixes #7"},
		{"every keyword, any case", "close #1 CLOSES #2 Closed #3 fix #4 fixes #5 FIXED #6 resolve #8 resolves #9 Resolved #10",
			"close\u200d #1 CLOSES\u200d #2 Closed\u200d #3 fix\u200d #4 fixes\u200d #5 FIXED\u200d #6 resolve\u200d #8 resolves\u200d #9 Resolved\u200d #10"},
		{"with a colon", "Resolves: #3", "Resolves\u200d: #3"},
		{"across a line break", "fixes\n#3", "fixes\u200d\n#3"},
		{"GH- form", "Fixes GH-3", "Fixes\u200d GH-3"},
		{"another repository", "Fixes other/repo#7", "Fixes\u200d other/repo#7"},
		{"its own repository by name", "Fixes Octo/Hello#7", "Fixes Octo/Hello#7"},
		{"another issue by URL", "closes https://github.com/octo/hello/issues/9", "closes\u200d https://github.com/octo/hello/issues/9"},
		{"its own issue by URL", "closes https://github.com/octo/hello/issues/7", "closes https://github.com/octo/hello/issues/7"},
		{"its number in another repository", "Fixes https://github.com/evil/hello/issues/7", "Fixes\u200d https://github.com/evil/hello/issues/7"},
		{"not a whole word", "prefixes #3 and unfixed #4", "prefixes #3 and unfixed #4"},
		{"a reference alone", "see #3", "see #3"},
		{"inside a code span", "`Fixes #3`", "`Fixes\u200d #3`"},
		{"inside a fence", "```\nFixes #3\n```\n", "```\nFixes\u200d #3\n```\n"},

		{"a mention", "thanks @alice!", "thanks @\u200dalice!"},
		{"a team", "cc @octo/admins", "cc @\u200docto/admins"},
		{"at the start, twice", "@a @b,@c", "@\u200da @\u200db,@\u200dc"},
		{"escaped", `\@alice`, `\@` + "\u200dalice"},
		{"a mail address", "mail a@b.example", "mail a@b.example"},
		{"in a code span", "use `@Override` here", "use `@Override` here"},
		{"in a fence", "```java\n@Override\n```\n", "```java\n@Override\n```\n"},
		{"by an entity", "&#64;alice and &commat;bob", "&amp;#64;alice and &amp;commat;bob"},

		{"out of a details block", "done\n</details>\n\n## Checks\n\n| all | pass |", "done\n&lt;/details>\n\n## Checks\n\n| all | pass |"},
		{"a comment that hides the rest", "ok <!-- ", "ok &lt;!-- "},
		{"an autolink", "<https://example.com>", "&lt;https://example.com>"},
		{"a comparison", "a < b && c > d", "a < b && c > d"},
		{"a tag in a code span", "`<details>`", "`<details>`"},
		{"an unclosed fence", "see:\n```go\nfunc x() {}\n", "see:\n```go\nfunc x() {}\n```\n"},
		{"an unclosed fence without a newline", "~~~~\nx", "~~~~\nx\n~~~~\n"},
		{"a shorter fence inside", "````\n```\n", "````\n```\n````\n"},
		{"an info string is no closing fence", "```\n```go\n", "```\n```go\n```\n"},
		{"closed fences are kept", "```\na\n```\nb\n", "```\na\n```\nb\n"},
		{"an indented fence is escaped", "    ```\n@x", "    \\`\\`\\`\n@\u200dx"},
		{"a fence in a list item is escaped", "* item\n  ~~~\n  open", "* item\n  \\~\\~\\~\n  open"},
		{"a fence in a quote is escaped", "> ```", "> \\`\\`\\`"},
		{"empty", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Inert(c.in, own); got != c.want {
				t.Errorf("Inert(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
		})
	}
}

func TestInertPlain(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Fix off-by-one (fixes #12, @alice)", "Fix off-by-one (fixes\u200d #12, @\u200dalice)"},
		{"Fixes #7 <b>&amp;</b> `x`", "Fixes #7 <b>&amp;</b> `x`"},
		{"closes octo/hello#8\n\ncc @a-@b", "closes\u200d octo/hello#8\n\ncc @\u200da-@\u200db"},
	}
	for _, c := range cases {
		if got := InertPlain(c.in, own); got != c.want {
			t.Errorf("InertPlain(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestCodeBlock(t *testing.T) {
	cases := []struct{ name, in, info, want string }{
		{"plain", "ok", "", "```\nok\n```\n"},
		{"language", "+a\n", "diff", "```diff\n+a\n```\n"},
		{"a fence inside", "x\n```\n</details>\n", "", "````\nx\n```\n</details>\n````\n"},
		{"a long run", "a ````` b", "", "``````\na ````` b\n``````\n"},
		{"a closing keyword", "echo Fixes #3 Fixes #7", "", "```\necho Fixes\u200d #3 Fixes #7\n```\n"},
		{"mentions stay: code notifies nobody", "@Override", "java", "```java\n@Override\n```\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CodeBlock(c.in, c.info, own); got != c.want {
				t.Errorf("CodeBlock(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
		})
	}
}

func TestShownArguments(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{`{"path":"a.go","n":12345678901234567890}`, "{\n  \"n\": 12345678901234567890,\n  \"path\": \"a.go\"\n}", true},
		{`{"cmd":"</details> & <b>"}`, "{\n  \"cmd\": \"\\u003c/details\\u003e \\u0026 \\u003cb\\u003e\"\n}", true},
		{` [1, "x"] `, "[\n  1,\n  \"x\"\n]", true},
		{`{"a":1} {"b":2}`, `"{\"a\":1} {\"b\":2}"`, false},
		{`{"a":1}]`, `"{\"a\":1}]"`, false},
		{"{\"a\":\n```\n", "\"{\\\"a\\\":\\n```\\n\"", false},
		{"", `""`, false},
	}
	for _, c := range cases {
		got, ok := ShownArguments(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ShownArguments(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
		if ok && !json.Valid([]byte(got)) {
			t.Errorf("ShownArguments(%q) = %q is not JSON", c.in, got)
		}
	}
}

// gfm renders Markdown about as GitHub does: GFM, raw HTML passed through.
var gfm = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))

// sentinel is the bot's own text after the model's: it must stay a
// paragraph of its own, outside every block the model's text opened.
const sentinel = "SENTINEL-7f3a"

// pageAround puts model Markdown inside a <details> block with the bot's
// own text after it, as the pull request body and status comment do.
func pageAround(md string) string {
	return "<details><summary>Trace</summary>\n\n" + md + "\n\n</details>\n\n" + sentinel + "\n"
}

// outsideCode is the text a reader sees outside code, entities decoded, as
// GitHub looks for mentions in it; all is every text, code included.
func outsideCode(t *testing.T, rendered []byte) (prose, all string) {
	t.Helper()
	z := nethtml.NewTokenizer(bytes.NewReader(rendered))
	var p, a strings.Builder
	depth := 0
	for {
		switch z.Next() {
		case nethtml.ErrorToken:
			return p.String(), a.String()
		case nethtml.StartTagToken:
			if n, _ := z.TagName(); string(n) == "code" || string(n) == "pre" {
				depth++
			}
		case nethtml.EndTagToken:
			if n, _ := z.TagName(); (string(n) == "code" || string(n) == "pre") && depth > 0 {
				depth--
			}
		case nethtml.TextToken:
			s := string(z.Text())
			a.WriteString(s + "\n")
			if depth == 0 {
				p.WriteString(s + "\n")
			}
		}
	}
}

// rawMention is an @-mention GitHub would notify.
var rawMention = regexp.MustCompile(`(^|[^\w@])@[A-Za-z0-9]`)

// checkPage renders md inside the page and fails when it leaves its
// block, mentions anyone or closes an issue other than own.
func checkPage(t *testing.T, in, md string) {
	t.Helper()
	page := pageAround(md)
	var out bytes.Buffer
	if err := gfm.Convert([]byte(page), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "</details>\n<p>"+sentinel+"</p>") {
		t.Fatalf("the text of %q leaves its block:\n%s\nrenders\n%s", in, page, out.String())
	}
	prose, all := outsideCode(t, out.Bytes())
	if m := rawMention.FindString(prose); m != "" {
		t.Errorf("the text of %q mentions %q:\n%s", in, m, out.String())
	}
	for _, m := range closingRef.FindAllStringSubmatch(all, -1) {
		if !own.names(m[3]) {
			t.Errorf("the text of %q closes %q:\n%s", in, m[0], out.String())
		}
	}
	// Only the page's own <details> is HTML: none comes from the text.
	doc := gfm.Parser().Parse(text.NewReader([]byte(md)))
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if k := n.Kind(); entering && (k == ast.KindHTMLBlock || k == ast.KindRawHTML) {
			t.Errorf("the text of %q holds HTML:\n%s", in, md)
		}
		return ast.WalkContinue, nil
	})
}

var fuzzSeeds = []string{
	"Fixes #12 and closes octo/hello#7, thanks @alice",
	"done\n</details>\n\n| check | ✅ |\n",
	"```\nunclosed",
	"<!-- hidden",
	"&#64;bob &#x40;eve &commat;mallory &#35;3",
	"    indented\n@carol",
	"~~~\n```\n",
	"* item\n  ```\n  open",
	"> quote ```\n> ```\n",
	"<details>\n<summary>x</summary>\n",
	"<script>alert(1)</script>",
	"[@dave](https://example.com) FIXES: GH-9",
}

// fuzzText fuzzes check from fuzzSeeds with the texts GitHub could store.
func fuzzText(f *testing.F, check func(t *testing.T, s string)) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) || strings.ContainsRune(s, '\r') {
			t.Skip("GitHub stores text as UTF-8 lines")
		}
		check(t, s)
	})
}

func FuzzInert(f *testing.F) {
	fuzzText(f, func(t *testing.T, s string) { checkPage(t, s, Inert(s, own)) })
}

func FuzzCodeBlock(f *testing.F) {
	fuzzText(f, func(t *testing.T, s string) {
		block := CodeBlock(s, "text", own)
		checkPage(t, s, block)
		// The block shows exactly the text, closing keywords aside.
		doc := gfm.Parser().Parse(text.NewReader([]byte(block)))
		code, ok := doc.FirstChild().(*ast.FencedCodeBlock)
		if !ok || code.NextSibling() != nil {
			t.Fatalf("CodeBlock(%q) is not one fenced block:\n%s", s, block)
		}
		var got strings.Builder
		for i := range code.Lines().Len() {
			seg := code.Lines().At(i)
			got.Write(seg.Value([]byte(block)))
		}
		want := inertClosing(s, own)
		if !strings.HasSuffix(want, "\n") {
			want += "\n"
		}
		if got.String() != want {
			t.Errorf("CodeBlock(%q) shows %q; want %q", s, got.String(), want)
		}
	})
}
