# A sign-up API for the launch rehearsal recipe.
#
#   POST /users        {email, password}: bcrypt the password, store the user (201)
#   POST /session      {email, password}: check the password with bcrypt, return {token}
#   GET  /api/me       the user behind the bearer token
#   GET  /api/tracks   the catalogue the app shows first
#   POST /api/plays    {track_id}: record a play (201)
#   GET  /health       for readiness probes
#
# Users live in a directory shared by every backend (USERS_DIR, one file per
# user), so a user who signed up on one backend can log in on the other; the
# token is signed, so any backend can check it. bcrypt makes sign-up and login
# CPU-bound (BCRYPT_COST, default 10); the rest is database time (sleep).

require "bcrypt"
require "digest"
require "fileutils"
require "json"
require "time"
require "openssl"
require "rack"
require "securerandom"

USERS_DIR = ENV.fetch("USERS_DIR", "/tmp/loadlab-launch-users")
BCRYPT_COST = Integer(ENV.fetch("BCRYPT_COST", "10"))
SECRET = ENV.fetch("TOKEN_SECRET", "launch-rehearsal-secret")
FileUtils.mkdir_p(USERS_DIR)

TRACKS = Array.new(30) do |i|
  { "id" => i + 1, "title" => "Session #{i + 1}", "minutes" => 5 + i % 20, "theme" => %w[focus confidence recovery determination][i % 4] }
end.freeze

# How many requests this backend served, printed when it stops (into
# loadlab's server.log), to see how HAProxy spread the load.
BACKEND = ENV.fetch("BACKEND", "app")
SERVED = Hash.new(0)
SERVED_LOCK = Mutex.new
at_exit { $stdout.puts "backend #{BACKEND}: served #{SERVED.sort.map { |k, v| "#{k} #{v}" }.join(', ')}"; $stdout.flush }

class LaunchAPI
  def call(env)
    req = Rack::Request.new(env)
    SERVED_LOCK.synchronize { SERVED[req.path_info] += 1 } unless req.path_info == "/health"
    case [req.request_method, req.path_info]
    in ["GET", "/health"] then [200, { "content-type" => "text/plain" }, ["ok\n"]]
    in ["POST", "/users"] then sign_up(req)
    in ["POST", "/session"] then log_in(req)
    in ["GET", "/api/me"] then authed(req) { |user| json(200, user.slice("id", "email", "created_at")) }
    in ["GET", "/api/tracks"] then authed(req) { |_| db(10); json(200, "tracks" => TRACKS) }
    in ["POST", "/api/plays"] then authed(req) { |user| play(req, user) }
    else json(404, "error" => "not found")
    end
  end

  private

  def db(ms) = sleep(ms / 1000.0)

  def json(status, obj)
    [status, { "content-type" => "application/json" }, [JSON.generate(obj)]]
  end

  def body(req)
    JSON.parse(req.body.read)
  rescue JSON::ParserError
    {}
  end

  def user_path(email) = File.join(USERS_DIR, Digest::SHA256.hexdigest(email.downcase) + ".json")

  def sign_up(req)
    b = body(req)
    email, password = b["email"].to_s, b["password"].to_s
    return json(422, "error" => "email and a password of 8 characters or more are required") unless email.include?("@") && password.size >= 8
    db(10) # the uniqueness check
    path = user_path(email)
    return json(409, "error" => "email taken") if File.exist?(path)
    hash = BCrypt::Password.create(password, cost: BCRYPT_COST) # CPU-bound
    user = { "id" => SecureRandom.uuid, "email" => email, "password_digest" => hash.to_s, "created_at" => Time.now.utc.iso8601 }
    tmp = "#{path}.#{SecureRandom.hex(4)}"
    File.write(tmp, JSON.generate(user))
    File.link(tmp, path) # atomic; fails if someone else took the email first
    File.unlink(tmp)
    db(10) # the insert
    json(201, user.slice("id", "email"))
  rescue Errno::EEXIST
    File.unlink(tmp) if tmp
    json(409, "error" => "email taken")
  end

  def log_in(req)
    b = body(req)
    db(5) # the lookup
    user = begin
      JSON.parse(File.read(user_path(b["email"].to_s)))
    rescue Errno::ENOENT
      nil
    end
    ok = user && BCrypt::Password.new(user["password_digest"]) == b["password"].to_s # CPU-bound
    return json(401, "error" => "wrong email or password") unless ok
    json(200, "token" => sign(user))
  end

  def sign(user)
    payload = [user["id"], user["email"], Time.now.to_i + 3600].join("|")
    data = [payload].pack("m0")
    "#{data}.#{OpenSSL::HMAC.hexdigest('SHA256', SECRET, data)}"
  end

  def authed(req)
    scheme, token = req.get_header("HTTP_AUTHORIZATION").to_s.split(" ", 2)
    data, mac = token.to_s.split(".", 2)
    if scheme == "Bearer" && data && mac && Rack::Utils.secure_compare(OpenSSL::HMAC.hexdigest("SHA256", SECRET, data), mac)
      id, email, expires = data.unpack1("m0").split("|")
      return yield("id" => id, "email" => email, "created_at" => nil) if expires.to_i > Time.now.to_i
    end
    json(401, "error" => "a valid bearer token is required")
  end

  def play(req, user)
    id = body(req)["track_id"].to_i
    track = TRACKS.find { |t| t["id"] == id }
    return json(422, "error" => "unknown track") unless track
    db(10)
    json(201, "user" => user["id"], "track" => track["id"], "at" => Time.now.utc.iso8601)
  end
end

run LaunchAPI.new
