# One "heavy page" for the Thin vs Puma recipe: most of each request is the
# application's own work (Ruby CPU time building the page, about 4 ms) plus a
# short cache round trip (1 ms of waiting), as in the story, where "most of
# the time is spent in processing the Rails stack and doing IO with memcached".
#   GET /         the page (about 20 KB of HTML)
#   GET /health   for loadlab's ready probe
# CPU_MS and CACHE_MS change the costs.

require "rack"

CPU_MS = Float(ENV.fetch("CPU_MS", "4"))
CACHE_MS = Float(ENV.fetch("CACHE_MS", "1"))
ITEMS = Array.new(200) { |i| { "id" => i, "name" => "Item #{i}", "price" => (i * 37) % 100 } }.freeze

# Ruby work for ms of this thread's CPU time (waiting for the GVL does not count).
def render_page(ms)
  clock = Process::CLOCK_THREAD_CPUTIME_ID
  stop = Process.clock_gettime(clock) + ms / 1000.0
  html = nil
  while Process.clock_gettime(clock) < stop
    html = ITEMS.map { |it| "<tr><td>#{it['id']}</td><td>#{Rack::Utils.escape_html(it['name'])}</td><td>$#{it['price']}.00</td></tr>" }.join("\n")
  end
  "<!doctype html><html><head><title>Heavy page</title></head><body><table>#{html}</table></body></html>\n"
end

app = lambda do |env|
  case env["PATH_INFO"]
  when "/health"
    [200, { "content-type" => "text/plain" }, ["ok\n"]]
  when "/"
    sleep(CACHE_MS / 1000.0) # memcached
    [200, { "content-type" => "text/html; charset=utf-8" }, [render_page(CPU_MS)]]
  else
    [404, { "content-type" => "text/plain" }, ["not found\n"]]
  end
end

run app
