# A memory-hungry catalogue app for the jemalloc recipe.
#
#   GET /products/:id   a product page built from many short-lived strings,
#                       that keeps one of them in a per-process fragment cache
#   GET /search?q=...   a JSON search result of 100 hits
#   GET /health         for loadlab's ready probe
#
# Ruby keeps long strings, arrays and hashes outside its object heap, in
# memory from malloc. Many threads allocating and freeing blocks of mixed sizes
# while a cache keeps some of them alive is how glibc malloc's per-thread
# arenas fragment and a Puma process's memory grows; jemalloc usually keeps
# it flatter. The catalogue is loaded before Puma forks its workers
# (--preload), so the workers share it copy-on-write: PSS is below RSS.

require "json"
require "rack"

CATALOG = Array.new(Integer(ENV.fetch("CATALOG_SIZE", "60000"))) do |i|
  {
    "id" => i,
    "name" => "Product #{i}",
    "description" => ("A fine product, number #{i}. " * 8),
    "tags" => Array.new(5) { |t| "tag-#{(i * 7 + t) % 300}" },
  }
end.freeze
# Promote the catalogue to the old generation before Puma forks, so that the
# workers' garbage collections do not write to (and unshare) its pages.
4.times { GC.start(full_mark: true, immediate_sweep: true) }

CACHE_SIZE = Integer(ENV.fetch("CACHE_SIZE", "20000"))
CACHE = []
CACHE_LOCK = Mutex.new

class Catalogue
  def call(env)
    req = Rack::Request.new(env)
    case req.path_info
    when "/health"
      [200, { "content-type" => "text/plain" }, ["ok\n"]]
    when %r{\A/products/(\d+)\z}
      product(Integer(Regexp.last_match(1), 10))
    when "/search"
      search(req.params["q"].to_s)
    else
      [404, { "content-type" => "text/plain" }, ["not found\n"]]
    end
  end

  private

  def product(id)
    item = CATALOG[id % CATALOG.size]
    sleep 0.003 # the database
    rng = Random.new(id)
    # A view built from a few hundred short-lived strings of mixed sizes.
    parts = Array.new(300) { |i| "<div class=\"r#{i}\">#{'x' * rng.rand(20..4000)}</div>" }
    related = CATALOG.sample(20).map { |p| p.merge("score" => rand) }
    body = "<h1>#{item['name']}</h1>#{parts.join}#{JSON.generate(related)}"
    # A fragment cache keeps one of those strings alive for a while: the
    # survivors pin the memory around them.
    keep = parts[rng.rand(parts.size)].dup
    CACHE_LOCK.synchronize do
      CACHE << keep
      CACHE.shift while CACHE.size > CACHE_SIZE
    end
    # Send the top of the page (the rest would be streamed, or gzipped).
    [200, { "content-type" => "text/html; charset=utf-8" }, [body[0, 40_000]]]
  end

  def search(q)
    sleep 0.005 # the search index
    hits = CATALOG.sample(100).map do |p|
      p.merge("snippet" => "#{p['description']} #{q}" * (1 + p["id"] % 4))
    end
    [200, { "content-type" => "application/json" }, [JSON.generate("q" => q, "hits" => hits)]]
  end
end

run Catalogue.new
