# A small issue tracker for the importer's browser tests, shaped like
# Redmine's forms: its new-issue and edit forms are multipart/form-data
# (they have a file input for attachments), CSRF-protected as Rails does it,
# and a chosen file is uploaded at once by the page's script, as Redmine's
# is, the form then carrying the upload's token.
#
#   GET  /projects/demo/issues/new   the new-issue form: authenticity_token, tracker, subject, description, watchers, a file
#   POST /uploads                    the file, with its type, X-CSRF-Token: {"upload": {"token": "ID.HEX"}}
#   POST /projects/demo/issues       create the issue (attachments[N][token]): redirect (302) to /issues/ID, its ID in the Location
#   GET  /issues/ID                  the issue, its attachments and notes, and the edit form (multipart; the issue's ID in a hidden field)
#   POST /issues/ID                  _method=patch: add a note: redirect (302) to /issues/ID
#   GET  /count                      {"issues": N, "attachments": N, "notes": N, "bytes": N}: what this server was sent
#   GET  /app.js                     the page's script: uploads a chosen file, puts its token in the form
#
# Sessions live in a signed cookie (Rack::Session::Cookie) whose secret is
# made at start, the CSRF token is a random value kept in the session, and
# IDs start at FIRST_ID: a freshly started server gives other tokens and IDs
# than the one a session was recorded on. A POST without the session's
# token is refused with 422 and no Location, as Rails does; so is an
# attachment token this session did not upload; a form whose hidden issue
# id is not the issue's is refused with 409.

require "json"
require "rack"
require "rack/session/cookie"
require "securerandom"

# SCRIPT uploads a file as soon as it is chosen, as Redmine's
# attachments.js does: its content to /uploads, sent with the file's own
# type as Rails' direct uploads do (a HAR that Playwright records keeps a
# text/plain body; an application/octet-stream one it leaves out), then the token the server
# gave into the form (attachments[N][token] and [filename]), the file
# input emptied.
SCRIPT = <<~JS
  document.addEventListener('change', async (ev) => {
    const input = ev.target;
    if (!input.classList.contains('upload') || !input.files.length) return;
    const file = input.files[0];
    const form = input.form;
    const n = form.querySelectorAll('input[name$="[token]"]').length + 1;
    form.dataset.uploading = 'yes';
    const resp = await fetch('/uploads?filename=' + encodeURIComponent(file.name), {
      method: 'POST',
      headers: { 'Content-Type': file.type || 'application/octet-stream', 'X-CSRF-Token': document.querySelector('meta[name=csrf-token]').content },
      body: await file.text(),
    });
    const { upload } = await resp.json();
    for (const [k, v] of [['token', upload.token], ['filename', file.name]]) {
      const h = document.createElement('input');
      h.type = 'hidden'; h.name = `attachments[${n}][${k}]`; h.value = v;
      form.querySelector('.attachments').appendChild(h);
    }
    input.value = '';
    form.dataset.uploading = 'done';
  });
JS

class Issues
  def initialize(first_id)
    @lock = Mutex.new
    @next_id = first_id
    @issues = {}
    @attachments = 0
    @bytes = 0
    @notes = 0
    @uploads = 0
  end

  def call(env)
    req = Rack::Request.new(env)
    session = req.session
    session["csrf"] ||= SecureRandom.base64(32)
    if req.post? && req.path_info == "/uploads"
      return [422, { "content-type" => "text/plain" }, ["422 invalid authenticity token\n"]] unless env["HTTP_X_CSRF_TOKEN"] == session["csrf"]
    elsif req.post?
      unless req.media_type == "multipart/form-data"
        return [415, { "content-type" => "text/plain" }, ["415 this form is sent as multipart/form-data\n"]]
      end
      if req.params["authenticity_token"] != session["csrf"]
        return [422, { "content-type" => "text/plain" }, ["422 invalid authenticity token\n"]]
      end
    end
    case [req.request_method, req.path_info]
    in ["GET", "/app.js"]
      [200, { "content-type" => "text/javascript" }, [SCRIPT]]
    in ["POST", "/uploads"]
      if req.media_type.to_s.empty? || req.form_data?
        return [415, { "content-type" => "text/plain" }, ["415 an upload is the file itself, with its own type\n"]]
      end
      data = req.body.read
      token = @lock.synchronize { @uploads += 1; "#{@uploads}.#{SecureRandom.hex(16)}" }
      (session["uploads"] ||= {})[token] = { "filename" => req.params["filename"].to_s, "size" => data.bytesize }
      [201, { "content-type" => "application/json" }, [JSON.generate({ "upload" => { "token" => token } })]]
    in ["GET", "/count"]
      n = @lock.synchronize { { "issues" => @issues.size, "attachments" => @attachments, "notes" => @notes, "bytes" => @bytes } }
      [200, { "content-type" => "application/json" }, [JSON.generate(n)]]
    in ["GET", "/projects/demo/issues/new"]
      page(session, "New issue", <<~HTML)
        <h2>New issue</h2>
        <form id="issue-form" method="post" action="/projects/demo/issues" enctype="multipart/form-data">
          #{token_field(session)}
          <input type="hidden" name="form_update_triggered_by" value="">
          <label>Tracker <select name="issue[tracker_id]"><option value="1">Bug</option><option value="2" selected>Feature</option></select></label>
          <label>Subject <input name="issue[subject]"></label>
          <label>Description <textarea name="issue[description]"></textarea></label>
          <label><input type="checkbox" name="issue[watcher_user_ids][]" value="3" checked> Ada</label>
          <label><input type="checkbox" name="issue[watcher_user_ids][]" value="4" checked> Grace</label>
          <input type="hidden" name="issue[watcher_user_ids][]" value="">
          <label>File <input type="file" name="attachments[dummy][file]" class="upload"></label>
          <span class="attachments"></span>
          <button type="submit" name="commit" value="Create">Create</button>
        </form>
      HTML
    in ["POST", "/projects/demo/issues"]
      subject = req.params.dig("issue", "subject").to_s
      return [422, { "content-type" => "text/plain" }, ["422 Subject cannot be blank\n"]] if subject.empty?
      files = attachments(req, session)
      return [422, { "content-type" => "text/plain" }, ["422 an attachment's token is not one of this session's uploads\n"]] if files.nil?
      id = @lock.synchronize do
        id = @next_id
        @next_id += 1
        @issues[id] = { subject: subject, description: req.params.dig("issue", "description").to_s,
                        watchers: Array(req.params.dig("issue", "watcher_user_ids")).reject(&:empty?), files: files, notes: [] }
        @attachments += files.size
        @bytes += files.sum { |f| f[:size] }
        id
      end
      redirect("/issues/#{id}")
    in ["GET", %r{\A/issues/(\d+)\z}]
      id = Integer($1)
      issue = @lock.synchronize { @issues[id] }
      return [404, { "content-type" => "text/plain" }, ["404 no such issue\n"]] unless issue
      page(session, "##{id}", <<~HTML)
        <h2 id="issue-#{id}">#{h(issue[:subject])}</h2>
        <p class="description">#{h(issue[:description])}</p>
        <ul class="attachments">#{issue[:files].map { |f| "<li>#{h(f[:name])} (#{f[:size]} bytes)</li>" }.join}</ul>
        <ol class="notes">#{issue[:notes].map { |n| "<li>#{h(n)}</li>" }.join}</ol>
        <form id="issue-form" method="post" action="/issues/#{id}" enctype="multipart/form-data">
          <input type="hidden" name="_method" value="patch">
          #{token_field(session)}
          <input type="hidden" name="issue_id" value="#{id}">
          <label>Notes <textarea name="issue[notes]"></textarea></label>
          <label>File <input type="file" name="attachments[dummy][file]" class="upload"></label>
          <span class="attachments"></span>
          <button type="submit" name="commit" value="Submit">Submit</button>
        </form>
      HTML
    in ["POST", %r{\A/issues/(\d+)\z}]
      id = Integer($1)
      return [405, { "content-type" => "text/plain" }, ["405 expected _method=patch\n"]] unless req.params["_method"] == "patch"
      return [409, { "content-type" => "text/plain" }, ["409 the form is of issue #{h(req.params["issue_id"])}, not #{id}\n"]] unless req.params["issue_id"] == id.to_s
      note = req.params.dig("issue", "notes").to_s
      files = attachments(req, session)
      return [422, { "content-type" => "text/plain" }, ["422 an attachment's token is not one of this session's uploads\n"]] if files.nil?
      ok = @lock.synchronize do
        issue = @issues[id]
        next false unless issue
        issue[:notes] << note unless note.empty?
        issue[:files].concat(files)
        @notes += 1 unless note.empty?
        @attachments += files.size
        @bytes += files.sum { |f| f[:size] }
        true
      end
      return [404, { "content-type" => "text/plain" }, ["404 no such issue\n"]] unless ok
      redirect("/issues/#{id}")
    else
      [404, { "content-type" => "text/plain" }, ["404 not found\n"]]
    end
  end

  private

  # attachments are the uploads that attachments[N][token] name, taken
  # out of the session; nil when one is not this session's. A file input
  # left empty sends a part with an empty filename, which is no attachment.
  def attachments(req, session)
    mine = session["uploads"] || {}
    files = []
    (req.params["attachments"] || {}).each_value do |a|
      next unless a.is_a?(Hash) && a["token"]
      up = mine.delete(a["token"])
      return nil unless up
      files << { name: up["filename"], size: up["size"] }
    end
    session["uploads"] = mine
    files
  end

  def h(s) = Rack::Utils.escape_html(s.to_s)

  def token_field(session)
    %(<input type="hidden" name="authenticity_token" value="#{h(session["csrf"])}" autocomplete="off">)
  end

  def page(session, title, body)
    [200, { "content-type" => "text/html; charset=utf-8" }, [<<~HTML]]
      <!DOCTYPE html>
      <html><head><meta charset="utf-8"><title>#{h(title)} - Demo</title>
      <meta name="csrf-param" content="authenticity_token">
      <meta name="csrf-token" content="#{h(session["csrf"])}">
      <script src="/app.js" defer></script></head>
      <body>#{body}</body></html>
    HTML
  end

  def redirect(path)
    [302, { "location" => path, "content-type" => "text/html" }, [%(<html><body>You are being <a href="#{h(path)}">redirected</a>.</body></html>)]]
  end
end

use Rack::Session::Cookie, key: "_demo_session", path: "/", httponly: true, same_site: :lax,
                           secret: SecureRandom.hex(64)
run Issues.new(Integer(ENV.fetch("FIRST_ID", "1")))
