package app

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// PostKind says what a post of a conversation is.
type PostKind string

// The posts of an issue's or pull request's conversation.
const (
	PostBody          PostKind = "description"    // the or pull request's own text
	PostComment       PostKind = "comment"        // a comment in the conversation
	PostReview        PostKind = "review"         // a submitted review: its verdict and body
	PostReviewComment PostKind = "review comment" // a comment on a diff line, or a reply in its thread
)

// Post is one piece of text of a conversation, as GitHub holds it.
type Post struct {
	Kind   PostKind
	ID     int64
	Author Actor
	At     time.Time
	Body   string
	// State is a review's verdict: APPROVED, CHANGES_REQUESTED, COMMENTED.
	State string
	// Path and Line locate a review comment; InReplyTo is the first
	// comment of the thread a reply belongs to.
	Path      string
	Line      int
	InReplyTo int64
}

// Conversation is what was written on an issue or pull request: its
// description, comments and, on a pull request, reviews and their inline
// threads, in any order.
type Conversation struct {
	Posts []Post
	// Truncated is set when GitHub held more than was read.
	Truncated bool
}

// Thread is a conversation as the model reads it: only what people who
// may command agentbot wrote, hidden text removed, oldest first, cut from
// the middle to a token budget.
type Thread struct {
	Text   string // the posts shown, each framed with its author, kind and time
	Shown  int    // posts shown whole or in part
	Hidden int    // posts by people who may not command, or by bots, not shown
	Cut    int    // posts cut from the middle to fit the budget
	// BodyHidden is set when the description itself was not shown.
	BodyHidden bool
	// AuthorMayCommand is set when the or pull request's author may
	// command agentbot: only then is its title as good as an instruction.
	// An outsider's title, like an outsider's description, is how a prompt
	// injection would reach the agent; unlike the description it names the
	// subject, so it is shown, framed as data.
	AuthorMayCommand bool
	// Unread is set when the conversation was too long to be read whole
	// (Conversation.Truncated).
	Unread bool
	// Images are the addresses of the images the shown posts embed
	// (Markdown images and <img> tags), in order, each once: the caller
	// decides which to fetch.
	Images []string
}

// HiddenNote says, in a sentence, how many posts were not shown: "" when
// none was.
func (th Thread) HiddenNote() string {
	switch {
	case th.Hidden == 0:
		return ""
	case th.BodyHidden && th.Hidden == 1:
		return "The description, by someone who may not command agentbot, was not shown."
	case th.BodyHidden:
		return fmt.Sprintf("%d posts by others, the description among them, were not shown.", th.Hidden)
	case th.Hidden == 1:
		return "1 comment by others was not shown."
	}
	return fmt.Sprintf("%d comments by others were not shown.", th.Hidden)
}

// ThreadOptions are what BuildThread needs besides the conversation.
type ThreadOptions struct {
	// MayCommand decides who is shown; (*Authorizer).MayCommand.
	MayCommand func(ctx context.Context, who Actor) (bool, error)
	// Self is the App's own login: its status comments and replies are
	// its reports, not the conversation, and are left out uncounted.
	Self string
	// Budget is the thread's size in estimated tokens (Limits.ContextTokens);
	// zero or less means no bound.
	Budget int
}

// threadCutMarker stands where posts were cut from the middle.
const threadCutMarker = "[… %d posts cut from the middle of the conversation to fit limits.context_tokens …]"

// BuildThread selects, cleans, orders and cuts a conversation for the
// model. Text by people who may not command agentbot is how a prompt
// injection would reach the agent, so it is never shown, only counted. The
// error is a failed permission lookup.
func BuildThread(ctx context.Context, c Conversation, o ThreadOptions) (Thread, error) {
	th := Thread{Unread: c.Truncated}
	decided := map[string]bool{}
	var shown []Post
	for _, p := range c.Posts {
		if o.Self != "" && strings.EqualFold(p.Author.Login, o.Self) {
			continue
		}
		login := strings.ToLower(p.Author.Login)
		ok, seen := decided[login]
		if !seen {
			var err error
			if ok, err = mayShow(ctx, o.MayCommand, p.Author); err != nil {
				return Thread{}, err
			}
			decided[login] = ok
		}
		body := strings.TrimSpace(CleanText(p.Body))
		th.AuthorMayCommand = th.AuthorMayCommand || (ok && p.Kind == PostBody)
		if !ok {
			th.Hidden++
			th.BodyHidden = th.BodyHidden || p.Kind == PostBody
			continue
		}
		if body == "" && p.Kind != PostReview {
			continue
		}
		p.Body = body
		shown = append(shown, p)
	}
	shown = order(shown)
	for _, p := range shown {
		for _, u := range ImageLinks(p.Body) {
			if !slices.Contains(th.Images, u) {
				th.Images = append(th.Images, u)
			}
		}
	}
	blocks := renderPosts(shown)
	th.Text, th.Shown, th.Cut = cutMiddle(blocks, o.Budget)
	return th, nil
}

// The ways a post embeds an image: Markdown's ![alt](url "title") and an
// HTML <img src="url">, as GitHub renders an attachment of either kind.
var (
	markdownImage = regexp.MustCompile(`!\[[^\]]*\]\(\s*<?([^\s)>]+)>?(?:\s+"[^"]*")?\s*\)`)
	htmlImage     = regexp.MustCompile(`(?i)<img\s[^>]*?src\s*=\s*["']([^"']+)["']`)
)

// ImageLinks returns the addresses of the images text embeds, in order.
func ImageLinks(text string) []string {
	type hit struct {
		at  int
		url string
	}
	var hits []hit
	for _, re := range []*regexp.Regexp{markdownImage, htmlImage} {
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			hits = append(hits, hit{m[0], text[m[2]:m[3]]})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(a.at, b.at) })
	out := make([]string, 0, len(hits))
	for _, h := range hits {
		out = append(out, h.url)
	}
	return out
}

// mayShow applies may to who; bots and unknown authors are never shown.
func mayShow(ctx context.Context, may func(context.Context, Actor) (bool, error), who Actor) (bool, error) {
	if who.Login == "" || who.IsBot() {
		return false, nil
	}
	if may == nil {
		return false, nil
	}
	return may(ctx, who)
}

// order puts posts in the order a reader follows them: oldest first, the
// replies of an inline thread right after its first comment.
func order(posts []Post) []Post {
	slices.SortStableFunc(posts, func(a, b Post) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(kindRank(a.Kind), kindRank(b.Kind)), cmp.Compare(a.ID, b.ID))
	})
	replies := map[int64][]Post{}
	roots := map[int64]bool{}
	for _, p := range posts {
		if p.Kind == PostReviewComment && p.InReplyTo == 0 {
			roots[p.ID] = true
		}
	}
	var out []Post
	for _, p := range posts {
		if p.Kind == PostReviewComment && p.InReplyTo != 0 && roots[p.InReplyTo] {
			replies[p.InReplyTo] = append(replies[p.InReplyTo], p)
			continue
		}
		out = append(out, p)
	}
	var threaded []Post
	for _, p := range out {
		threaded = append(threaded, p)
		if p.Kind == PostReviewComment {
			threaded = append(threaded, replies[p.ID]...)
		}
	}
	return threaded
}

// kindRank orders posts of the same second: the description first, and a
// review before the inline comments submitted with it.
func kindRank(k PostKind) int {
	switch k {
	case PostBody:
		return 0
	case PostReview:
		return 1
	}
	return 2
}

// block is one post as rendered: its opening tag and its body.
type block struct {
	head, body string
}

func (b block) String() string { return b.head + "\n" + b.body + "\n</post>\n" }

// renderPosts frames each post. A frame's tags inside a body are escaped,
// so that no text can pretend to end its post and speak as another author.
func renderPosts(posts []Post) []block {
	out := make([]block, 0, len(posts))
	for _, p := range posts {
		attrs := fmt.Sprintf("author=%q kind=%q at=%q", "@"+p.Author.Login, string(p.Kind), p.At.UTC().Format(time.RFC3339))
		if p.State != "" {
			attrs += fmt.Sprintf(" verdict=%q", strings.ToLower(strings.ReplaceAll(p.State, "_", " ")))
		}
		if p.Path != "" {
			attrs += fmt.Sprintf(" path=%q", p.Path)
			if p.Line > 0 {
				attrs += fmt.Sprintf(" line=\"%d\"", p.Line)
			}
		}
		if p.InReplyTo != 0 {
			attrs += " reply=\"true\""
		}
		body := frameTags.Replace(p.Body)
		out = append(out, block{head: "<post " + attrs + ">", body: body})
	}
	return out
}

// frameTags escapes the tags that frame a post.
var frameTags = strings.NewReplacer("<post", "&lt;post", "</post", "&lt;/post", "<conversation", "&lt;conversation", "</conversation", "&lt;/conversation")

// EstimateTokens is a text's size in tokens, estimated at four bytes a
// token, as the budgets reckon it before a tokenizer has seen the text.
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// cutMiddle joins blocks within budget tokens: when they do not fit, the
// first third of the budget keeps the oldest posts (the request and its
// first answers), the rest the newest, and a marker says how many posts
// were cut between them. A single post longer than its share is cut in
// its own middle.
func cutMiddle(blocks []block, budget int) (text string, shown, cut int) {
	total := 0
	for _, b := range blocks {
		total += EstimateTokens(b.String())
	}
	if budget <= 0 || total <= budget {
		var sb strings.Builder
		for _, b := range blocks {
			sb.WriteString(b.String())
		}
		return sb.String(), len(blocks), 0
	}
	marker := fmt.Sprintf(threadCutMarker, len(blocks))
	budget -= EstimateTokens(marker) + 1
	headShare := budget / 3
	var head, tail []string
	used, i := 0, 0
	for ; i < len(blocks); i++ {
		s := blocks[i].String()
		if n := EstimateTokens(s); used+n > headShare {
			if i == 0 {
				s = shrink(blocks[i], headShare)
				head, used, i = append(head, s), EstimateTokens(s), 1
			}
			break
		}
		head = append(head, blocks[i].String())
		used += EstimateTokens(s)
	}
	j := len(blocks) - 1
	for ; j >= i; j-- {
		s := blocks[j].String()
		n := EstimateTokens(s)
		if used+n > budget {
			if len(tail) == 0 {
				s = shrink(blocks[j], budget-used)
				tail, j = append(tail, s), j-1
			}
			break
		}
		tail = append(tail, s)
		used += n
	}
	cut = j - i + 1
	var sb strings.Builder
	for _, s := range head {
		sb.WriteString(s)
	}
	if cut > 0 {
		sb.WriteString(fmt.Sprintf(threadCutMarker, cut) + "\n")
	}
	for _, s := range slices.Backward(tail) {
		sb.WriteString(s)
	}
	return sb.String(), len(head) + len(tail), cut
}

// shrink cuts a post's body in its middle so that the post fits in
// tokens, keeping its frame.
func shrink(b block, tokens int) string {
	const mark = "\n[… cut …]\n"
	room := tokens*4 - len(b.head) - len("\n\n</post>\n") - len(mark)
	if room < 0 {
		room = 0
	}
	body := b.body
	if len(body) > room {
		h := room / 2
		body = strings.ToValidUTF8(body[:h], "") + mark + strings.ToValidUTF8(body[len(body)-(room-h):], "")
	}
	return block{head: b.head, body: body}.String()
}
