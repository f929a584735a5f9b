// The agent's HTTP endpoint: a thin wrapper over cpp-httplib's server (the
// only file that includes httplib.h) serving GET handlers from a fixed pool of
// worker threads.
//
// Concurrency: connections are accepted by one thread and queued to the pool
// (`threads` workers); the listen backlog is raised from httplib's 5 to
// SOMAXCONN so a burst of 1,000 connections is queued by the kernel rather
// than refused or retried. Idle keep-alive connections are closed after 1 s
// so they cannot pin workers; a request must arrive within 2 s.
//
// Thread-safety: handlers run on pool threads concurrently; Start()/Stop()
// from one controlling thread.

#ifndef LAGGARD_AGENT_HTTP_SERVER_H_
#define LAGGARD_AGENT_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "base/status.h"

namespace laggard::agent {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse()>;

  explicit HttpServer(int threads);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers a GET handler for an exact path; before Listen().
  void Get(const std::string& path, Handler handler);
  // Binds "HOST:PORT" (port 0: any free port). Fails as a whole when the
  // address is malformed or cannot be bound.
  Status Listen(const std::string& host_port);
  int port() const { return port_; }
  // Serves on a background thread until Stop().
  void Start();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace laggard::agent

#endif  // LAGGARD_AGENT_HTTP_SERVER_H_
