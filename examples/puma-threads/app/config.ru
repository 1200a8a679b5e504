# A small shop with a guest checkout, for the Puma threads recipe.
#
#   GET  /               home: product list and a form with the CSRF token
#   GET  /products/:id   a product page with its add-to-cart form
#   POST /cart           checks authenticity_token against the session, adds the product
#   POST /checkout       checks the token again, turns the cart into an order
#   GET  /health         for loadlab's ready probe
#
# Each request spends some time "in the database" (sleep, which releases the
# GVL like real I/O) and some real Ruby CPU time (building the page), so more
# Puma threads help until one process's GVL is busy all the time.
# DB_SCALE and CPU_SCALE multiply the costs below (default 1).

require "securerandom"
require "rack"
require "rack/session/cookie"

DB_SCALE  = Float(ENV.fetch("DB_SCALE", "1"))
CPU_SCALE = Float(ENV.fetch("CPU_SCALE", "1"))

# Milliseconds of database time and of Ruby CPU time per page.
COST = {
  home:     { db: 30, cpu: 8 },
  product:  { db: 40, cpu: 10 },
  cart:     { db: 40, cpu: 8 },
  checkout: { db: 60, cpu: 12 },
}.freeze

PRODUCTS = (1..20).map { |i| { id: i, name: "Product #{i}", price: 5 + (i * 37) % 95 } }.freeze

module Work
  module_function

  # Waiting for the database: sleep releases the GVL, as a socket read does.
  def db(ms)
    sleep(ms * DB_SCALE / 1000.0)
  end

  # Real Ruby work for ms of this thread's CPU time (not wall time: a thread
  # waiting for the GVL does not count), building strings and hashes as
  # rendering a view does.
  def cpu(ms)
    clock = Process::CLOCK_THREAD_CPUTIME_ID
    stop = Process.clock_gettime(clock) + ms * CPU_SCALE / 1000.0
    out = nil
    while Process.clock_gettime(clock) < stop
      rows = PRODUCTS.map { |p| { "id" => p[:id], "label" => "#{p[:name]} at $#{p[:price]}.00" } }
      out = rows.map { |r| "<li data-id=\"#{r['id']}\">#{Rack::Utils.escape_html(r['label'])}</li>" }.join("\n")
    end
    out
  end
end

class Shop
  def call(env)
    req = Rack::Request.new(env)
    session = env["rack.session"]
    session["csrf"] ||= SecureRandom.base64(32)
    case [req.request_method, req.path_info]
    in ["GET", "/health"]
      [200, { "content-type" => "text/plain" }, ["ok\n"]]
    in ["GET", "/"]
      page(:home, session) { |token| home(token) }
    in ["GET", %r{\A/products/(\d+)\z}]
      product = PRODUCTS.find { |p| p[:id] == Integer(Regexp.last_match(1), 10) }
      return not_found unless product
      page(:product, session) { |token| product_page(product, token) }
    in ["POST", "/cart"]
      return forbidden unless token_ok?(req, session)
      product = PRODUCTS.find { |p| p[:id] == req.POST["product_id"].to_i }
      return [422, { "content-type" => "text/plain" }, ["unknown product\n"]] unless product
      (session["cart"] ||= []) << product[:id]
      page(:cart, session) { |token| cart_page(session["cart"], token) }
    in ["POST", "/checkout"]
      return forbidden unless token_ok?(req, session)
      cart = session["cart"] || []
      return [422, { "content-type" => "text/plain" }, ["empty cart\n"]] if cart.empty?
      email = req.POST["email"].to_s
      return [422, { "content-type" => "text/plain" }, ["email required\n"]] unless email.include?("@")
      session["cart"] = []
      page(:checkout, session) { |_| order_page(cart, email) }
    else
      not_found
    end
  end

  private

  def page(kind, session)
    Work.db(COST[kind][:db])
    rows = Work.cpu(COST[kind][:cpu])
    body = layout(yield(session["csrf"]), rows)
    [200, { "content-type" => "text/html; charset=utf-8" }, [body]]
  end

  def token_ok?(req, session)
    given = req.POST["authenticity_token"].to_s
    want = session["csrf"].to_s
    !given.empty? && given.bytesize == want.bytesize && Rack::Utils.secure_compare(given, want)
  end

  def forbidden
    [403, { "content-type" => "text/plain" }, ["invalid authenticity token\n"]]
  end

  def not_found
    [404, { "content-type" => "text/plain" }, ["not found\n"]]
  end

  def layout(main, rows)
    <<~HTML
      <!doctype html>
      <html><head><title>Shop</title></head>
      <body>
      #{main}
      <aside><ul>#{rows}</ul></aside>
      </body></html>
    HTML
  end

  def token_field(token)
    %(<input type="hidden" name="authenticity_token" value="#{Rack::Utils.escape_html(token)}">)
  end

  def home(token)
    links = PRODUCTS.map { |p| %(<li><a href="/products/#{p[:id]}">#{p[:name]}</a></li>) }.join
    <<~HTML
      <h1>Welcome</h1>
      <form action="/search" method="get">#{token_field(token)}<input name="q"></form>
      <ul class="products">#{links}</ul>
    HTML
  end

  def product_page(product, token)
    <<~HTML
      <h1>#{product[:name]}</h1><p class="price">$#{product[:price]}.00</p>
      <form action="/cart" method="post">
        #{token_field(token)}
        <input type="hidden" name="product_id" value="#{product[:id]}">
        <button>Add to cart</button>
      </form>
    HTML
  end

  def cart_page(cart, token)
    items = cart.map { |id| "<li>#{PRODUCTS[id - 1][:name]}</li>" }.join
    <<~HTML
      <h1>Your cart</h1><ul class="cart">#{items}</ul>
      <form action="/checkout" method="post">#{token_field(token)}<input name="email"><button>Checkout</button></form>
    HTML
  end

  def order_page(cart, email)
    total = cart.sum { |id| PRODUCTS[id - 1][:price] }
    %(<h1>Thank you</h1><p class="order-number">Order #{SecureRandom.hex(6).upcase}</p><p>#{cart.size} items, $#{total}.00, receipt to #{Rack::Utils.escape_html(email)}</p>)
  end
end

use Rack::Session::Cookie, key: "shop_session", secret: ENV.fetch("SESSION_SECRET", "a" * 64), same_site: :lax
run Shop.new
