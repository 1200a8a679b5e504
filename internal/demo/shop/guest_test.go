package shop

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// guest is one shopper with its own cookie jar, driving the real server the
// way a browser (or a loadlab VU) does. It does not follow redirects, so each
// call is one HTTP request.
type guest struct {
	client *http.Client
	base   string
	// observe, if set, is called with each response's duration and header.
	observe func(time.Duration, http.Header)
}

func newGuest(base string, transport http.RoundTripper) *guest {
	jar, err := cookiejar.New(nil)
	if err != nil {
		panic(err) // cookiejar.New never fails without options
	}
	return &guest{
		base: base,
		client: &http.Client{
			Jar:           jar,
			Transport:     transport,
			Timeout:       30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// response is what a test needs of an HTTP response.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) document() (*goquery.Document, error) {
	return goquery.NewDocumentFromReader(bytes.NewReader(r.body))
}

// do sends one request; a non-nil form is sent urlencoded.
func (g *guest) do(ctx context.Context, method, path string, form url.Values) (response, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, g.base+path, body)
	if err != nil {
		return response{}, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return g.send(req)
}

func (g *guest) send(req *http.Request) (response, error) {
	start := time.Now()
	resp, err := g.client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if g.observe != nil {
		g.observe(time.Since(start), resp.Header)
	}
	if err != nil {
		return response{}, fmt.Errorf("%s %s: read body: %w", req.Method, req.URL.Path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// page GETs path, expects 200 and returns the value of the first element
// matching tokenSelector's value attribute (the form's CSRF token).
func (g *guest) page(ctx context.Context, path, tokenSelector string) (token string, err error) {
	resp, err := g.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.status != http.StatusOK {
		return "", fmt.Errorf("GET %s: status %d, want 200", path, resp.status)
	}
	doc, err := resp.document()
	if err != nil {
		return "", fmt.Errorf("GET %s: parse HTML: %w", path, err)
	}
	token, ok := doc.Find(tokenSelector).First().Attr("value")
	if !ok || token == "" {
		return "", fmt.Errorf("GET %s: no %s", path, tokenSelector)
	}
	return token, nil
}

// checkout runs the guest-checkout journey of the field story: visit, browse
// a product, add it to the cart with the form's CSRF token, view the cart,
// check out. It returns the order number from the confirmation page.
func (g *guest) checkout(ctx context.Context, productID int64, email string) (orderNumber string, err error) {
	if _, err := g.page(ctx, "/", `input[name="authenticity_token"]`); err != nil {
		return "", err
	}
	token, err := g.page(ctx, fmt.Sprintf("/products/%d", productID), `#add-to-cart input[name="authenticity_token"]`)
	if err != nil {
		return "", err
	}
	resp, err := g.do(ctx, http.MethodPost, "/cart", url.Values{
		"authenticity_token": {token},
		"product_id":         {fmt.Sprint(productID)},
	})
	if err != nil {
		return "", fmt.Errorf("POST /cart: %w", err)
	}
	if resp.status != http.StatusSeeOther || resp.header.Get("Location") != "/cart" {
		return "", fmt.Errorf("POST /cart: status %d to %q, want 303 to /cart", resp.status, resp.header.Get("Location"))
	}
	token, err = g.page(ctx, "/cart", `#checkout input[name="authenticity_token"]`)
	if err != nil {
		return "", err
	}
	resp, err = g.do(ctx, http.MethodPost, "/checkout", url.Values{"authenticity_token": {token}, "email": {email}})
	if err != nil {
		return "", fmt.Errorf("POST /checkout: %w", err)
	}
	if resp.status != http.StatusOK {
		return "", fmt.Errorf("POST /checkout: status %d, want 200", resp.status)
	}
	doc, err := resp.document()
	if err != nil {
		return "", fmt.Errorf("POST /checkout: parse HTML: %w", err)
	}
	orderNumber = doc.Find("#order-number").Text()
	if orderNumber == "" {
		return "", fmt.Errorf("POST /checkout: no #order-number in the confirmation page")
	}
	return orderNumber, nil
}

// journeyRequests is the number of HTTP requests in guest.checkout.
const journeyRequests = 5
