# A Rails-like page for the size-the-box recipe: each request waits for its
# "database" (sleep, which releases the GVL as a socket read does), renders
# for a while (real Ruby CPU work, which holds the GVL) and builds objects
# on the way (REQUEST_KB of strings, alive until the response is built).
# Each Puma worker also holds BOOT_MB once booted, as a Rails app's loaded
# code and caches do, so that workers cost memory and threads cost less.
#
#   GET /        the page
#   GET /health  for loadlab's ready probe
#
# DB_MS, CPU_MS, REQUEST_KB and BOOT_MB (in server.env) set the costs.

DB_MS      = Float(ENV.fetch("DB_MS", "20"))
CPU_MS     = Float(ENV.fetch("CPU_MS", "5"))
REQUEST_KB = Integer(ENV.fetch("REQUEST_KB", "1024"), 10)
BOOT_MB    = Integer(ENV.fetch("BOOT_MB", "40"), 10)

# What a booted worker holds: BOOT_MB of distinct strings, written to, so
# that each worker's pages are its own (Puma loads the app in each worker,
# without --preload).
BOOTED = Array.new(BOOT_MB) { |i| format("%08d", i) * 131_072 }.freeze

module Work
  module_function

  # ms of this thread's CPU time, building strings as a view does.
  def cpu(ms)
    clock = Process::CLOCK_THREAD_CPUTIME_ID
    stop = Process.clock_gettime(clock) + ms / 1000.0
    out = nil
    out = (1..50).map { |i| "<li data-id=\"#{i}\">Item #{i}</li>" }.join("\n") while Process.clock_gettime(clock) < stop
    out
  end

  # The request's objects: kb KiB of strings, each 64 KiB.
  def objects(kb)
    Array.new((kb + 63) / 64) { |i| ("o" * 65_536) << i.to_s }
  end
end

app = lambda do |env|
  case env["PATH_INFO"]
  when "/health"
    [200, { "content-type" => "text/plain" }, ["ok\n"]]
  when "/"
    held = Work.objects(REQUEST_KB)
    sleep(DB_MS / 1000.0)
    body = Work.cpu(CPU_MS)
    [200, { "content-type" => "text/html" }, ["<!doctype html><ul>#{body}</ul><p>#{held.size} objects, #{BOOTED.size} MiB booted</p>\n"]]
  else
    [404, { "content-type" => "text/plain" }, ["not found\n"]]
  end
end

run app
