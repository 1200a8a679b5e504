# A small notes app for the importer's browser tests: what a recording must
# be correlated on, the way a Rails app has it.
#
#   GET  /login      a form with its CSRF token in a hidden field (and in <meta name="csrf-token">)
#   POST /login      email and password (NOTES_PASSWORD): redirect (303) to /notes
#   GET  /notes      the notes, and a form to add one
#   POST /notes      add a note: redirect (302) to /notes/ID, its ID in the Location
#   GET  /notes/ID   the note, and a logout form
#   POST /logout     forget the session: redirect (303) to /login
#   GET  /count      {"notes": N}: how many notes this server made
#   GET  /app.css    the stylesheet every page links
#   GET  /app.js     the script every page loads
#
# Sessions live in a signed cookie (Rack::Session::Cookie) whose secret is
# made at start, the CSRF token is a random value kept in the session, and
# IDs start at FIRST_ID: a freshly started server gives other tokens and IDs
# than the one a session was recorded on. Every POST without the session's
# token is refused with 422, as Rails does.

require "json"
require "rack"
require "rack/session/cookie"
require "securerandom"

PASSWORD = ENV.fetch("NOTES_PASSWORD", "correct horse battery")

class Notes
  def initialize(first_id)
    @lock = Mutex.new
    @next_id = first_id
    @notes = {}
  end

  def call(env)
    req = Rack::Request.new(env)
    session = req.session
    session["csrf"] ||= SecureRandom.base64(32)
    if req.post? && req.params["authenticity_token"] != session["csrf"] && env["HTTP_X_CSRF_TOKEN"] != session["csrf"]
      return [422, { "content-type" => "text/plain" }, ["422 invalid authenticity token\n"]]
    end
    case [req.request_method, req.path_info]
    in ["GET", "/app.css"]
      [200, { "content-type" => "text/css" }, ["body { font-family: sans-serif }\n"]]
    in ["GET", "/app.js"]
      [200, { "content-type" => "text/javascript" }, ["document.documentElement.dataset.js = 'on';\n"]]
    in ["GET", "/count"]
      n = @lock.synchronize { @notes.size }
      [200, { "content-type" => "application/json" }, [JSON.generate({ "notes" => n })]]
    in ["GET", "/login"]
      page(session, <<~HTML)
        <h1>Log in</h1>
        <form id="login" method="post" action="/login">
          #{token_field(session)}
          <label>Email <input name="email" type="email"></label>
          <label>Password <input name="password" type="password"></label>
          <button type="submit">Log in</button>
        </form>
      HTML
    in ["POST", "/login"]
      return [401, { "content-type" => "text/plain" }, ["401 wrong email or password\n"]] unless req.params["password"] == PASSWORD && req.params["email"].to_s.include?("@")
      session["user"] = req.params["email"]
      session["csrf"] = SecureRandom.base64(32) # a new token once logged in, as Rails does
      redirect(303, "/notes")
    in ["GET", "/notes"]
      return redirect(302, "/login") unless session["user"]
      mine = @lock.synchronize { @notes.select { |_, n| n[:user] == session["user"] }.map { |id, n| "<li><a href=\"/notes/#{id}\">#{Rack::Utils.escape_html(n[:title])}</a></li>" } }
      page(session, <<~HTML)
        <h1>Notes of #{Rack::Utils.escape_html(session["user"])}</h1>
        <ul>#{mine.last(20).join}</ul>
        <form id="new-note" method="post" action="/notes">
          #{token_field(session)}
          <label>Title <input name="note[title]"></label>
          <button type="submit">Add</button>
        </form>
      HTML
    in ["POST", "/notes"]
      return redirect(302, "/login") unless session["user"]
      title = req.params.dig("note", "title").to_s
      return [400, { "content-type" => "text/plain" }, ["400 a note needs a title\n"]] if title.empty?
      id = @lock.synchronize { id = @next_id; @next_id += 1; @notes[id] = { title: title, user: session["user"] }; id }
      redirect(302, "/notes/#{id}")
    in ["GET", %r{\A/notes/(\d+)\z}]
      note = @lock.synchronize { @notes[Integer($1)] }
      return redirect(302, "/login") unless session["user"]
      return [404, { "content-type" => "text/plain" }, ["404 no such note\n"]] unless note && note[:user] == session["user"]
      page(session, <<~HTML)
        <h1 id="note-#{$1}">#{Rack::Utils.escape_html(note[:title])}</h1>
        <form id="logout" method="post" action="/logout">
          #{token_field(session)}
          <button type="submit">Log out</button>
        </form>
      HTML
    in ["POST", "/logout"]
      session.clear
      redirect(303, "/login")
    else
      [404, { "content-type" => "text/plain" }, ["404 not found\n"]]
    end
  end

  private

  def token_field(session)
    %(<input type="hidden" name="authenticity_token" value="#{Rack::Utils.escape_html(session["csrf"])}">)
  end

  def page(session, body)
    [200, { "content-type" => "text/html; charset=utf-8" }, [<<~HTML]]
      <!DOCTYPE html>
      <html><head><meta charset="utf-8"><title>Notes</title>
      <meta name="csrf-token" content="#{Rack::Utils.escape_html(session["csrf"])}">
      <link rel="stylesheet" href="/app.css"><script src="/app.js"></script></head>
      <body>#{body}</body></html>
    HTML
  end

  def redirect(status, path)
    [status, { "location" => path, "content-type" => "text/plain" }, [""]]
  end
end

use Rack::Session::Cookie, key: "_notes_session", path: "/", httponly: true, same_site: :lax,
                           secret: SecureRandom.hex(64)
run Notes.new(Integer(ENV.fetch("FIRST_ID", "1")))
