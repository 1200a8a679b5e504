package shop

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/mail"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// routes builds the shop's handler: /health outside the worker pool,
// everything else inside it.
func (s *Shop) routes() http.Handler {
	app := http.NewServeMux()
	app.HandleFunc("GET /{$}", s.home)
	app.HandleFunc("GET /products/{id}", s.productPage)
	app.HandleFunc("GET /api/products/{id}", s.productAPI)
	app.HandleFunc("POST /cart", s.addToCart)
	app.HandleFunc("GET /cart", s.cart)
	app.HandleFunc("POST /checkout", s.checkout)
	app.HandleFunc("POST /users", s.signUp)
	app.HandleFunc("POST /session", s.logIn)
	app.HandleFunc("GET /api/me", s.me)

	root := http.NewServeMux()
	root.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok")
	})
	root.Handle("/", s.worker(app))
	return root
}

// sessionCookie names the cookie that holds the session id.
const sessionCookie = "_shop_session"

// maxBodyBytes bounds request bodies.
const maxBodyBytes = 64 << 10

func (s *Shop) home(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess, err := s.currentSession(w, r)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	products, err := s.store.featuredProducts(ctx)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	count, err := s.store.cartCount(ctx, sess.ID)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	s.work.spend(weightListPage)
	s.renderPage(w, r, http.StatusOK, pageHome, homeView{
		layout:   layout{Title: "Home", CSRFToken: sess.CSRFToken, CartCount: count},
		Products: products,
	})
}

func (s *Shop) productPage(w http.ResponseWriter, r *http.Request) {
	if wantsJSON(r) {
		s.productAPI(w, r)
		return
	}
	ctx := r.Context()
	sess, err := s.currentSession(w, r)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	id, ok := pathID(r)
	var p product
	if ok {
		p, ok, err = s.store.product(ctx, id)
		if err != nil {
			s.serverError(w, r, err)
			return
		}
	}
	if !ok {
		s.errorPage(w, r, sess, http.StatusNotFound, "There is no such product.")
		return
	}
	related, err := s.store.relatedProducts(ctx, id)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	count, err := s.store.cartCount(ctx, sess.ID)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	s.work.spend(weightPage)
	s.renderPage(w, r, http.StatusOK, pageProduct, productView{
		layout:  layout{Title: p.Name, CSRFToken: sess.CSRFToken, CartCount: count},
		Product: p,
		Related: related,
	})
}

func (s *Shop) productAPI(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	var p product
	if ok {
		var err error
		p, ok, err = s.store.product(r.Context(), id)
		if err != nil {
			s.serverError(w, r, err)
			return
		}
	}
	if !ok {
		s.writeJSON(w, r, http.StatusNotFound, apiError{"no such product"})
		return
	}
	s.work.spend(weightSmallJSON)
	s.writeJSON(w, r, http.StatusOK, p)
}

func (s *Shop) addToCart(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	params, err := readParams(w, r)
	if err != nil {
		http.Error(w, "400 bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	sess, ok, err := s.verifiedSession(r, params)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if !ok {
		s.rejectForgery(w, r)
		return
	}
	productID, err := strconv.ParseInt(params.Get("product_id"), 10, 64)
	if err != nil || productID <= 0 {
		s.errorPage(w, r, sess, http.StatusUnprocessableEntity, "Choose a product to add to your cart.")
		return
	}
	quantity := int64(1)
	if q := params.Get("quantity"); q != "" {
		quantity, err = strconv.ParseInt(q, 10, 64)
		if err != nil || quantity < 1 || quantity > maxQuantity {
			s.errorPage(w, r, sess, http.StatusUnprocessableEntity, fmt.Sprintf("The quantity must be 1 to %d.", maxQuantity))
			return
		}
	}
	if _, ok, err := s.store.product(ctx, productID); err != nil || !ok {
		if err != nil {
			s.serverError(w, r, err)
		} else {
			s.errorPage(w, r, sess, http.StatusNotFound, "There is no such product.")
		}
		return
	}
	if err := s.store.addToCart(ctx, sess.ID, productID, quantity); err != nil {
		s.serverError(w, r, err)
		return
	}
	s.work.spend(weightRedirect)
	http.Redirect(w, r, "/cart", http.StatusSeeOther)
}

func (s *Shop) cart(w http.ResponseWriter, r *http.Request) {
	sess, err := s.currentSession(w, r)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	lines, err := s.store.cartLines(r.Context(), sess.ID)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	s.work.spend(weightPage)
	s.renderPage(w, r, http.StatusOK, pageCart, newCartView(sess, lines))
}

func (s *Shop) checkout(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	params, err := readParams(w, r)
	if err != nil {
		http.Error(w, "400 bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	sess, ok, err := s.verifiedSession(r, params)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if !ok {
		s.rejectForgery(w, r)
		return
	}
	lines, err := s.store.cartLines(ctx, sess.ID)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	view := newCartView(sess, lines)
	view.Email = strings.TrimSpace(params.Get("email"))
	if len(lines) == 0 {
		view.Error = "Your cart is empty: add a product before checking out."
	} else if !validEmail(view.Email) {
		view.Error = "Enter a valid email address for the receipt."
	}
	if view.Error != "" {
		s.work.spend(weightPage)
		s.renderPage(w, r, http.StatusUnprocessableEntity, pageCart, view)
		return
	}
	o, ok, err := s.store.placeOrder(ctx, sess.ID, view.Email)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if !ok { // another request emptied the cart meanwhile
		view.Lines, view.ItemCount, view.TotalCents = nil, 0, 0
		view.Error = "Your cart is empty: add a product before checking out."
		s.renderPage(w, r, http.StatusUnprocessableEntity, pageCart, view)
		return
	}
	s.work.spend(weightCheckout)
	s.renderPage(w, r, http.StatusOK, pageOrder, orderView{
		layout:     layout{Title: "Order " + o.Number(), CSRFToken: sess.CSRFToken},
		Order:      o,
		Lines:      lines,
		TotalCents: o.TotalCents,
	})
}

// credentials is the body of POST /users and POST /session.
type credentials struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// minPasswordLength is the shortest password sign-up accepts; bcrypt itself
// accepts at most 72 bytes.
const minPasswordLength = 8

func (s *Shop) signUp(w http.ResponseWriter, r *http.Request) {
	creds, err := readCredentials(w, r)
	if err != nil {
		s.writeJSON(w, r, http.StatusBadRequest, apiError{err.Error()})
		return
	}
	if !validEmail(creds.Email) {
		s.writeJSON(w, r, http.StatusUnprocessableEntity, apiError{"email is not a valid address"})
		return
	}
	if len(creds.Password) < minPasswordLength {
		s.writeJSON(w, r, http.StatusUnprocessableEntity, apiError{fmt.Sprintf("password must be at least %d characters", minPasswordLength)})
		return
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(creds.Password), s.opts.BcryptCost)
	if errors.Is(err, bcrypt.ErrPasswordTooLong) {
		s.writeJSON(w, r, http.StatusUnprocessableEntity, apiError{"password must be at most 72 bytes"})
		return
	}
	if err != nil {
		s.serverError(w, r, fmt.Errorf("hash password: %w", err))
		return
	}
	id, ok, err := s.store.createUser(r.Context(), creds.Email, hash)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if !ok {
		s.writeJSON(w, r, http.StatusConflict, apiError{"email is already registered"})
		return
	}
	s.work.spend(weightSmallJSON)
	s.writeJSON(w, r, http.StatusCreated, struct {
		ID int64 `json:"id"`
	}{id})
}

func (s *Shop) logIn(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	creds, err := readCredentials(w, r)
	if err != nil {
		s.writeJSON(w, r, http.StatusBadRequest, apiError{err.Error()})
		return
	}
	u, hash, found, err := s.store.userByEmail(ctx, creds.Email)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if !found {
		// Compare anyway, so an unknown email costs what a known one does
		// and the response time does not tell which emails exist.
		hash = s.dummyHash()
	}
	if err := bcrypt.CompareHashAndPassword(hash, []byte(creds.Password)); err != nil || !found {
		if err != nil && !errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) {
			s.serverError(w, r, fmt.Errorf("compare password: %w", err))
			return
		}
		s.writeJSON(w, r, http.StatusUnauthorized, apiError{"wrong email or password"})
		return
	}
	token := rand.Text()
	if err := s.store.createToken(ctx, u.ID, hashToken(token)); err != nil {
		s.serverError(w, r, err)
		return
	}
	s.work.spend(weightSmallJSON)
	s.writeJSON(w, r, http.StatusOK, struct {
		Token string `json:"token"`
	}{token})
}

func (s *Shop) me(w http.ResponseWriter, r *http.Request) {
	token, ok := bearerToken(r)
	var u user
	if ok {
		var err error
		u, ok, err = s.store.userByToken(r.Context(), hashToken(token))
		if err != nil {
			s.serverError(w, r, err)
			return
		}
	}
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="shop"`)
		s.writeJSON(w, r, http.StatusUnauthorized, apiError{"a valid bearer token is required"})
		return
	}
	s.work.spend(weightSmallJSON)
	s.writeJSON(w, r, http.StatusOK, u)
}

// bearerToken reads "Authorization: Bearer TOKEN" (the scheme in any case).
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// dummyHash is a bcrypt hash at the shop's cost that no password matches,
// made on first use.
func (s *Shop) dummyHash() []byte {
	s.dummyOnce.Do(func() {
		s.dummy, _ = bcrypt.GenerateFromPassword([]byte(rand.Text()), s.opts.BcryptCost)
	})
	return s.dummy
}

// hashToken is what the database keeps of an API token, so a leaked table
// does not leak usable tokens.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// currentSession returns the session named by the request's cookie, or starts
// a new one and sets its cookie.
func (s *Shop) currentSession(w http.ResponseWriter, r *http.Request) (session, error) {
	sess, ok, err := s.requestSession(r)
	if err != nil || ok {
		return sess, err
	}
	sess = session{ID: rand.Text(), CSRFToken: rand.Text()}
	if err := s.store.createSession(r.Context(), sess); err != nil {
		return session{}, err
	}
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    sess.ID,
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
	})
	return sess, nil
}

// requestSession returns the session named by the request's cookie, if any.
func (s *Shop) requestSession(r *http.Request) (session, bool, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return session{}, false, nil
	}
	return s.store.findSession(r.Context(), c.Value)
}

// verifiedSession returns the session of a state-changing request whose
// authenticity token (form field or X-CSRF-Token header) matches it. ok is
// false when there is no session or the token does not match.
func (s *Shop) verifiedSession(r *http.Request, params url.Values) (sess session, ok bool, err error) {
	sess, ok, err = s.requestSession(r)
	if err != nil || !ok {
		return session{}, false, err
	}
	token := params.Get("authenticity_token")
	if token == "" {
		token = r.Header.Get("X-CSRF-Token")
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(sess.CSRFToken)) != 1 {
		return session{}, false, nil
	}
	return sess, true, nil
}

// rejectForgery answers a state-changing request without a valid token, as
// Rails does: 422.
func (s *Shop) rejectForgery(w http.ResponseWriter, r *http.Request) {
	s.errorPage(w, r, session{}, http.StatusUnprocessableEntity,
		"The change you wanted was rejected: the authenticity token is missing, wrong, or from another session. Reload the page and try again.")
}

// readParams reads a form (urlencoded or multipart) or a JSON object body.
// JSON values are turned into strings, so both arrive the same way.
func readParams(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mediaType != "application/json" {
		if mediaType == "multipart/form-data" {
			if err := r.ParseMultipartForm(maxBodyBytes); err != nil {
				return nil, fmt.Errorf("read form: %w", err)
			}
		} else if err := r.ParseForm(); err != nil {
			return nil, fmt.Errorf("read form: %w", err)
		}
		return r.PostForm, nil
	}
	var body map[string]any
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		return nil, fmt.Errorf("read JSON: %w", err)
	}
	params := url.Values{}
	for k, v := range body {
		switch v := v.(type) {
		case string:
			params.Set(k, v)
		case json.Number:
			params.Set(k, v.String())
		case bool:
			params.Set(k, strconv.FormatBool(v))
		case nil:
		default:
			return nil, fmt.Errorf("read JSON: field %q must be a string, number or boolean", k)
		}
	}
	return params, nil
}

// readCredentials reads the JSON body of POST /users and POST /session.
func readCredentials(w http.ResponseWriter, r *http.Request) (credentials, error) {
	var creds credentials
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&creds); err != nil {
		return credentials{}, fmt.Errorf("read JSON: %w", err)
	}
	creds.Email = strings.ToLower(strings.TrimSpace(creds.Email))
	return creds, nil
}

// validEmail accepts a bare address such as guest-1@example.com.
func validEmail(email string) bool {
	if len(email) > 254 {
		return false
	}
	addr, err := mail.ParseAddress(email)
	return err == nil && addr.Address == email
}

// pathID reads the {id} path segment; ok is false unless it is a positive
// integer.
func pathID(r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	return id, err == nil && id > 0
}

// wantsJSON reports whether the client asked for JSON first.
func wantsJSON(r *http.Request) bool {
	return strings.HasPrefix(strings.TrimSpace(r.Header.Get("Accept")), "application/json")
}

// renderPage writes a rendered page, or a 500 if rendering failed.
func (s *Shop) renderPage(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	buf, err := s.pages.render(name, data)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes()) // an error here means the client left; nothing to do
}

// errorPage renders an HTML error page with status.
func (s *Shop) errorPage(w http.ResponseWriter, r *http.Request, sess session, status int, message string) {
	s.renderPage(w, r, status, pageError, errorView{
		layout:     layout{Title: http.StatusText(status), CSRFToken: sess.CSRFToken},
		Status:     status,
		StatusText: http.StatusText(status),
		Message:    message,
	})
}

// serverError logs err and answers 500; when the client has gone (its
// context is done) there is no one to answer, so it only notes that.
func (s *Shop) serverError(w http.ResponseWriter, r *http.Request, err error) {
	if ctxErr := r.Context().Err(); ctxErr != nil {
		s.opts.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request abandoned",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("reason", err))
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	s.opts.Logger.LogAttrs(r.Context(), slog.LevelError, "internal server error",
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("error", err))
	if wantsJSON(r) || strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/users" || r.URL.Path == "/session" {
		s.writeJSON(w, r, http.StatusInternalServerError, apiError{"internal server error"})
		return
	}
	http.Error(w, "500 internal server error", http.StatusInternalServerError)
}

// apiError is the body of a JSON error response.
type apiError struct {
	Error string `json:"error"`
}

// writeJSON writes v as the JSON response body.
func (s *Shop) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		s.opts.Logger.LogAttrs(r.Context(), slog.LevelError, "internal server error",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("error", fmt.Errorf("encode JSON: %w", err)))
		http.Error(w, "500 internal server error", http.StatusInternalServerError)
		return
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body) // an error here means the client left; nothing to do
}
