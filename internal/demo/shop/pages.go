package shop

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
)

//go:embed templates/*.html
var templateFiles embed.FS

// pages are the shop's HTML templates, parsed once: each page is the layout
// plus that page's "content".
type pages struct {
	byName map[string]*template.Template
}

// Page names, which are also the template files' base names.
const (
	pageHome    = "home"
	pageProduct = "product"
	pageCart    = "cart"
	pageOrder   = "order"
	pageError   = "error"
)

func parsePages() (*pages, error) {
	funcs := template.FuncMap{"money": money}
	base, err := template.New("layout").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("shop: parse layout template: %w", err)
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range []string{pageHome, pageProduct, pageCart, pageOrder, pageError} {
		page, err := base.Clone()
		if err == nil {
			page, err = page.ParseFS(templateFiles, "templates/"+name+".html")
		}
		if err != nil {
			return nil, fmt.Errorf("shop: parse %s template: %w", name, err)
		}
		p.byName[name] = page
	}
	return p, nil
}

// render executes a page into a buffer, so a failed render is a clean 500
// rather than half a page.
func (p *pages) render(name string, data any) (*bytes.Buffer, error) {
	page, ok := p.byName[name]
	if !ok {
		return nil, fmt.Errorf("render %s: no such page", name)
	}
	var buf bytes.Buffer
	if err := page.ExecuteTemplate(&buf, "layout", data); err != nil {
		return nil, fmt.Errorf("render %s: %w", name, err)
	}
	return &buf, nil
}

// money formats cents as dollars: 1299 is "$12.99".
func money(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s$%d.%02d", sign, cents/100, cents%100)
}

// The data each page renders. layout is what every page shares.
type (
	layout struct {
		Title     string
		CSRFToken string
		CartCount int64
	}
	homeView struct {
		layout
		Products []product
	}
	productView struct {
		layout
		Product product
		Related []product
	}
	cartView struct {
		layout
		Lines      []cartLine
		ItemCount  int64
		TotalCents int64
		Email      string
		Error      string
	}
	orderView struct {
		layout
		Order      order
		Lines      []cartLine
		TotalCents int64
	}
	errorView struct {
		layout
		Status     int
		StatusText string
		Message    string
	}
)

// newCartView totals the cart's lines.
func newCartView(sess session, lines []cartLine) cartView {
	v := cartView{layout: layout{Title: "Your cart", CSRFToken: sess.CSRFToken}, Lines: lines}
	for _, l := range lines {
		v.ItemCount += l.Quantity
		v.TotalCents += l.SubtotalCents()
	}
	v.CartCount = v.ItemCount
	return v
}
