# A chat on Rails' ActionCable (Debian's ruby-actioncable, standalone on Rack
# and Puma, no Rails app): GET /login sets the user cookie; /cable is the
# ActionCable server, whose connection is identified by that cookie;
# ChatChannel streams a room and broadcasts what a member speaks; GET /health.
require "action_cable"
require "logger"
require "json"

module ApplicationCable
  class Connection < ActionCable::Connection::Base
    identified_by :user

    def connect
      self.user = request.cookies["user"] || reject_unauthorized_connection
    end
  end

  class Channel < ActionCable::Channel::Base
  end
end

class ChatChannel < ApplicationCable::Channel
  def subscribed
    stream_from "chat_#{params[:room]}"
  end

  def speak(data)
    ActionCable.server.broadcast("chat_#{params[:room]}", { "from" => user, "text" => data["text"] })
  end
end

ActionCable.server.config.cable = { "adapter" => "async" }
ActionCable.server.config.connection_class = -> { ApplicationCable::Connection }
ActionCable.server.config.disable_request_forgery_protection = true
ActionCable.server.config.logger = Logger.new(ENV["CABLE_LOG"] ? $stderr : File::NULL)
ActionCable.server.config.worker_pool_size = Integer(ENV.fetch("CABLE_WORKERS", "4"))

map "/cable" do
  run ActionCable.server
end
map "/login" do
  run ->(env) {
    user = Rack::Request.new(env).params["user"] || "guest"
    [200, { "content-type" => "text/plain", "set-cookie" => "user=#{user}; path=/" }, ["hello #{user}\n"]]
  }
end
map "/health" do
  run ->(_env) { [200, { "content-type" => "text/plain" }, ["ok\n"]] }
end
