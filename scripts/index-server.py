"""A package index on loopback for cudist's tests and benchmarks: nothing leaves the machine.

    python3 scripts/index-server.py LOG NAME DIR [NAME DIR ...]

Each NAME/DIR pair is an index at /NAME/simple/<project>/ listing the wheels in DIR whose name
normalises to the project (PEP 691 JSON when asked for with its Accept type, else PEP 503 HTML),
with their files at /NAME/files/<file>, and a find-links page at /NAME/links.html linking to
every wheel (relative links, as pip's --find-links pages may have). Files are served whole or by one byte range (`Range:
bytes=a-b`, `bytes=a-`, `bytes=-n`: 206 with Content-Range), as PyPI's file host serves them.
JSON pages give each file's size and Requires-Python (from its METADATA). A file `W.yanked`
beside wheel W marks W yanked (PEP 592), its content the reason. Project `demo`
always gets HTML; project `demo-bad` lists demo_cu12-1.0 with a wrong sha256. Every
answer appends "PATH BYTES [RANGE]" to LOG. The port is printed on the first line of stdout.
"""
import hashlib
import http.server
import json
import os
import sys

log, pairs = sys.argv[1], sys.argv[2:]
houses = dict(zip(pairs[::2], pairs[1::2]))
hashes = {}


def norm(n):
    return n.lower().replace("_", "-").replace(".", "-")


def requires_python(path):
    import zipfile
    try:
        with zipfile.ZipFile(path) as z:
            for n in z.namelist():
                if n.endswith(".dist-info/METADATA"):
                    for line in z.read(n).decode("utf-8", "replace").splitlines():
                        if line.lower().startswith("requires-python:"):
                            return line.split(":", 1)[1].strip()
    except (OSError, zipfile.BadZipFile):
        pass
    return None


def yanked(path):
    """The yank reason of a wheel (`W.yanked` beside it), or None."""
    try:
        with open(path + ".yanked") as f:
            return f.read().strip() or True
    except OSError:
        return None


def sha256(path):
    if path not in hashes:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        hashes[path] = h.hexdigest()
    return hashes[path]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # As servers that keep connections alive do (nginx's tcp_nodelay, waitress): the headers and
    # the body are written apart, and with Nagle's algorithm a small body waits for the client's
    # delayed ACK of the headers (40 ms a request on Linux).
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def record(self, n, extra=""):
        with open(log, "a") as f:
            f.write("%s %d%s\n" % (self.path, n, extra))

    def send(self, body, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.record(len(body))

    def send_file(self, path):
        size = os.path.getsize(path)
        want = self.headers.get("Range")
        start, end, status = 0, size - 1, 200
        if want and want.startswith("bytes=") and "," not in want:
            a, _, b = want[6:].partition("-")
            if a == "":
                start, end = max(0, size - int(b)), size - 1
            else:
                start, end = int(a), min(int(b), size - 1) if b else size - 1
            if start > end or start >= size:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return self.record(0, " 416")
            status = 206
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()
        with open(path, "rb") as f:
            f.seek(start)
            left = end - start + 1
            while left:
                block = f.read(min(left, 1 << 20))
                self.wfile.write(block)
                left -= len(block)
        self.record(end - start + 1, " %d-%d" % (start, end) if status == 206 else "")

    def do_GET(self):
        parts = self.path.strip("/").split("/")
        if len(parts) == 2 and parts[0] in houses and parts[1] == "links.html":
            names = sorted(n for n in os.listdir(houses[parts[0]]) if n.endswith(".whl"))
            links = "".join('<a href="files/%s">%s</a><br/>\n' % (n, n) for n in names)
            return self.send(("<html><body>%s</body></html>" % links).encode(), "text/html")
        if len(parts) < 3 or parts[0] not in houses:
            return self.send_error(404)
        ix, house = parts[0], houses[parts[0]]
        if parts[1] == "simple" and len(parts) == 3:
            project = parts[2]
            files = [n for n in sorted(os.listdir(house))
                     if n.endswith(".whl") and norm(n.split("-")[0]) == project]
            entries = [(n, "/%s/files/%s" % (ix, n), sha256(os.path.join(house, n))) for n in files]
            if project == "demo-bad":
                entries = [(n, "/%s/files/%s" % (ix, n), "0" * 64)
                           for n in sorted(os.listdir(house)) if n.startswith("demo_cu12-1.0")]
            accept = self.headers.get("Accept", "")
            if "application/vnd.pypi.simple.v1+json" in accept and project != "demo":
                body = json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": [
                    {"filename": n, "url": u, "hashes": {"sha256": h},
                     "size": os.path.getsize(os.path.join(house, n)),
                     "requires-python": requires_python(os.path.join(house, n)),
                     "yanked": yanked(os.path.join(house, n)) or False}
                    for n, u, h in entries]}).encode()
                return self.send(body, "application/vnd.pypi.simple.v1+json")
            def anchor(n, u, h):
                y = yanked(os.path.join(house, n))
                attr = "" if y is None else ' data-yanked="%s"' % ("" if y is True else y)
                return '<a href="%s#sha256=%s"%s>%s</a><br/>' % (u, h, attr, n)
            links = "".join(anchor(n, u, h) for n, u, h in entries)
            body = ("<html><body>%s</body></html>" % links).encode()
            return self.send(body, "text/html")
        if parts[1] == "files" and len(parts) == 3 and parts[2] in os.listdir(house):
            return self.send_file(os.path.join(house, parts[2]))
        self.send_error(404)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
