package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/llm"
)

// Bounds on the images passed to a model that reads them
// (model.vision): each is fetched on the host, never in the sandbox.
const (
	maxImages     = 5
	maxImageBytes = 5 << 20
	imageTimeout  = 30 * time.Second
)

// imageTypes are the formats models take, as the bytes sniff.
var imageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// attachmentHosts serve github.com's older user attachments.
var attachmentHosts = []string{"user-images.githubusercontent.com", "private-user-images.githubusercontent.com"}

// GitHub's storage buckets for attachments' bytes, which its attachment
// hosts redirect to: github-production-user-asset-*.s3.amazonaws.com.
const (
	attachmentStoragePrefix = "github-production-user-asset-"
	attachmentStorageSuffix = ".s3.amazonaws.com"
)

// images fetches the image attachments of the thread's shown posts when
// the policy says the model reads images, for a new transcript and for a
// resumed one alike: a saved transcript keeps only their digests. Every image not passed — not a
// GitHub attachment, past the count, too large, of another type, or not
// fetched — is a refusal in the task's trace; none fails the task.
func (r *Runner) images(ctx context.Context, tk *task, th *app.Thread) []llm.Image {
	if !tk.policy.Policy.Model.Vision || th == nil || len(th.Images) == 0 {
		return nil
	}
	web, err := url.Parse(strings.TrimSuffix(tk.policy.Repo.CloneURL, ".git"))
	if err != nil {
		tk.log.Warn("no web address to tell attachments by", "err", err)
		return nil
	}
	client := imageClient(web)
	var out []llm.Image
	for _, u := range th.Images {
		var im llm.Image
		err := errors.New("more than 5 images; the first 5 were passed")
		if len(out) < maxImages {
			im, err = fetchAttachment(ctx, client, web, u)
		}
		if err != nil {
			tk.log.Info("image refused", "url", u, "reason", err)
			tk.rep.trace(ctx, app.TraceEvent{Time: time.Now().UTC(), Kind: app.TraceRefusal, Name: "image", Outcome: "refused", Args: u, Detail: err.Error()})
			continue
		}
		out = append(out, im)
	}
	return out
}

// imageClient fetches attachments of the GitHub at web. A redirect is
// followed only over https, not far, and only to GitHub or its attachment
// and storage hosts; and every connection to a host other than web's own
// (which the operator configured, and may be internal) is checked on the
// address actually dialled, so that no redirect or DNS answer leads the
// worker to its own or its cluster's internal addresses.
func imageClient(web *url.URL) *http.Client {
	var proxies sync.Map // the hosts of the worker's own proxies, which connect onwards
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = func(r *http.Request) (*url.URL, error) {
		u, err := http.ProxyFromEnvironment(r)
		if u != nil {
			proxies.Store(u.Hostname(), true)
		}
		return u, err
	}
	transport.DialContext = attachmentDialer(web, func(host string) bool {
		_, ok := proxies.Load(host)
		return ok
	})
	return &http.Client{Timeout: imageTimeout, Transport: transport, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "https" || len(via) >= 3 || !redirectAllowed(req.URL, web) {
			return fmt.Errorf("redirected to %s", req.URL.Redacted())
		}
		return nil
	}}
}

// attachmentDialer dials web's host, and a host trusted says is the
// worker's own proxy, as they are; any other only at an Internet address
// (app.IsInternalAddr), checked on the address dialled.
func attachmentDialer(web *url.URL, trusted func(host string) bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	direct := &net.Dialer{Timeout: imageTimeout}
	checked := &net.Dialer{Timeout: imageTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("dial %s: %w", address, err)
		}
		if app.IsInternalAddr(ap.Addr(), nil) {
			return fmt.Errorf("%s is an internal address", ap.Addr())
		}
		return nil
	}}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err == nil && (strings.EqualFold(host, web.Hostname()) || trusted(host)) {
			return direct.DialContext(ctx, network, addr)
		}
		return checked.DialContext(ctx, network, addr)
	}
}

// redirectAllowed reports whether a redirect to u stays with GitHub: its
// web host, its attachment hosts, or the storage GitHub serves
// attachments' bytes from.
func redirectAllowed(u, web *url.URL) bool {
	if u.User != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	return u.Host == web.Host || slices.Contains(attachmentHosts, u.Host) ||
		strings.HasPrefix(host, attachmentStoragePrefix) && strings.HasSuffix(host, attachmentStorageSuffix)
}

// fetchAttachment reads one GitHub user attachment, within the limits.
func fetchAttachment(ctx context.Context, client *http.Client, web *url.URL, raw string) (llm.Image, error) {
	u, err := url.Parse(raw)
	if err != nil || !isAttachment(u, web) {
		return llm.Image{}, errors.New("not a GitHub user attachment")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return llm.Image{}, fmt.Errorf("fetch: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return llm.Image{}, fmt.Errorf("fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return llm.Image{}, fmt.Errorf("fetch: %s", resp.Status)
	}
	if resp.ContentLength > maxImageBytes {
		return llm.Image{}, fmt.Errorf("%d bytes; the limit is %d", resp.ContentLength, maxImageBytes)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxImageBytes+1))
	if err != nil {
		return llm.Image{}, fmt.Errorf("fetch: %w", err)
	}
	if len(data) > maxImageBytes {
		return llm.Image{}, fmt.Errorf("over %d bytes; the limit is %d", maxImageBytes, maxImageBytes)
	}
	typ := http.DetectContentType(data)
	if !slices.Contains(imageTypes, typ) {
		return llm.Image{}, fmt.Errorf("of type %s; PNG, JPEG, GIF and WebP are passed", typ)
	}
	return llm.NewImage(typ, data), nil
}

// isAttachment reports whether u is a file people attached on GitHub:
// under /user-attachments/assets/ of the GitHub the repository lives on,
// or on GitHub's attachment hosts. Other addresses are not fetched, so a
// comment cannot make the host fetch what it likes.
func isAttachment(u, web *url.URL) bool {
	if u.User != nil {
		return false
	}
	if u.Scheme == web.Scheme && u.Host == web.Host && strings.HasPrefix(u.Path, "/user-attachments/assets/") {
		return true
	}
	return u.Scheme == "https" && slices.Contains(attachmentHosts, u.Host)
}
