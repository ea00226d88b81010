// The map of mapthenet serve: every placed domain as a point drawn by
// WebGL 2 from typed arrays the server sends as they are (a million points
// are one draw call; panning and zooming change two uniforms), with a 2D
// canvas over it for the links of the selected domain, the links between
// communities and the labels. Hand-written rather than a library: see
// DESIGN.md ("serve") for the measurements behind that choice.
//
// Start-up is in two steps. The first frame needs only points.bin
// (positions to 16 bits, sizes, the default colouring: 6 bytes a point),
// which the page's <link rel=preload> has the browser fetch while this
// script loads. After it, details.bin (exact positions, ranks, the other
// colourings) and names.txt come in, and the grid for picking and labels
// is built.
"use strict";
(function () {
  var t0 = performance.now();
  // window.mapthenet is the page's state for scripts and tests.
  var api = window.mapthenet = { ready: false, selected: null, busy: 0, flying: false, frames: 0, loadMs: 0, linksDrawn: 0, marks: {} };
  // mark notes when a step of the start-up ended (ms since navigation).
  function mark(name) { api.marks[name] = Math.round(performance.now()); }
  mark("script");

  var glCanvas = document.getElementById("gl"), ov = document.getElementById("overlay");
  var ctx = ov.getContext("2d");
  var msg = document.getElementById("message");
  var W = 1, H = 1, dpr = 1;

  // ---- data ---------------------------------------------------------
  // Point i is the i-th in map order (best rank first: the API's "point");
  // the arrays are in draw order, the reverse, so that the best-ranked
  // are drawn last, on top: point i is entry n-1-i.
  var meta, n = 0, xy16, sizes, xy = null, ranks = null, colorArrays = {}, colorBy = "community";
  var nameBytes = null, nameOff = null, nameCache = null, utf8 = new TextDecoder();
  var minX, minY, maxX, maxY, spanX, spanY, qx, qy;
  // details: the second step, done (or failed) once loadDetails is.
  var detailsDone, details = new Promise(function (ok, fail) { detailsDone = { ok: ok, fail: fail }; });

  function fetchOK(url) {
    return fetch(url).then(function (r) {
      if (!r.ok) throw new Error(url + ": HTTP " + r.status);
      return r;
    });
  }
  function snapshotOf(r) { return r.headers.get("X-Mapthenet-Snapshot"); }

  // load fetches meta.json and points.bin of the snapshot the page names
  // (the preloaded responses), or, when the snapshot moved meanwhile,
  // meta.json and then points.bin of the new one.
  function load(tries) {
    var snap = tries === 0 ? document.body.getAttribute("data-snapshot") : "";
    var q = snap ? "?s=" + encodeURIComponent(snap) : "";
    return fetchOK("/api/map/meta.json" + q).then(function (r) { return r.json(); }).then(function (m) {
      mark("meta");
      var points = m.snapshot === snap ? "/api/map/points.bin" + q : "/api/map/points.bin?s=" + encodeURIComponent(m.snapshot);
      return fetchOK(points).then(function (r) {
        // A new snapshot between the two requests: start again.
        if (snapshotOf(r) !== m.snapshot && tries < 3) return load(tries + 1);
        return r.arrayBuffer().then(function (buf) { mark("points"); setData(m, buf); });
      });
    });
  }

  function section(buf, s) {
    var T = { float32: Float32Array, uint32: Uint32Array, uint16: Uint16Array, uint8: Uint8Array }[s.type];
    return new T(buf, s.offset, s.length);
  }

  function setData(m, buf) {
    meta = m; n = m.placed;
    xy16 = section(buf, m.sections.xy16);
    // Sizes come in runs (they follow the rank order).
    sizes = new Uint8Array(n);
    for (var k = 0, at = 0; k < m.size_runs.length; k++) { sizes.fill(m.size_runs[k][0], at, at + m.size_runs[k][1]); at += m.size_runs[k][1]; }
    colorBy = m.colorings[0].by;
    colorArrays[colorBy] = section(buf, m.sections["color_" + colorBy]);
    minX = m.bounds[0]; minY = m.bounds[1]; maxX = m.bounds[2]; maxY = m.bounds[3];
    qx = (maxX - minX) / 65535; qy = (maxY - minY) / 65535;
    spanX = Math.max(maxX - minX, 1e-6); spanY = Math.max(maxY - minY, 1e-6);
    document.getElementById("snap").textContent = "snapshot " + m.snapshot;
    document.getElementById("count").textContent = n.toLocaleString("en") + " of " + m.known.toLocaleString("en") + " domains on the map";
  }

  // loadDetails fetches the second step: exact positions, ranks and the
  // other colourings, then the grid.
  function loadDetails() {
    return fetchOK("/api/map/details.bin?s=" + encodeURIComponent(meta.snapshot)).then(function (r) {
      if (snapshotOf(r) !== meta.snapshot) throw new Error("a new snapshot is out: reload the page to see it");
      return r.arrayBuffer();
    }).then(function (buf) {
      var ds = meta.detail_sections;
      xy = section(buf, ds.xy);
      ranks = section(buf, ds.rank);
      meta.colorings.forEach(function (c) { if (ds["color_" + c.by]) colorArrays[c.by] = section(buf, ds["color_" + c.by]); });
      setPositions();
      buildGrid();
      api.detailsMs = Math.round(performance.now() - t0);
      redraw();
    });
  }
  // loadNames fetches the names (one a line) and notes where each starts;
  // a name is decoded when it is shown.
  function loadNames() {
    return fetchOK("/api/map/names.txt?s=" + encodeURIComponent(meta.snapshot)).then(function (r) { return r.arrayBuffer(); }).then(function (buf) {
      var b = new Uint8Array(buf), off = new Uint32Array(n + 1), k = 0;
      for (var j = 0; j < b.length && k < n; j++) if (b[j] === 10) off[++k] = j + 1;
      for (; k < n; k++) off[k + 1] = off[k];
      nameBytes = b; nameOff = off; nameCache = [];
    });
  }
  function nameOf(i) {
    if (!nameOff) return null;
    var s = nameCache[i];
    if (s === undefined) {
      var a = nameOff[i], b = nameOff[i + 1];
      s = nameCache[i] = utf8.decode(nameBytes.subarray(a, b > a && nameBytes[b - 1] === 10 ? b - 1 : b));
    }
    return s;
  }

  // Point i's position: exact once details.bin is in, to 16 bits before.
  function X(i) { var d = n - 1 - i; return xy ? xy[2 * d] : minX + xy16[2 * d] * qx; }
  function Y(i) { var d = n - 1 - i; return xy ? xy[2 * d + 1] : minY + xy16[2 * d + 1] * qy; }
  // rankOf is point i's rank (0: unranked; -1: not known yet).
  function rankOf(i) { return ranks ? ranks[n - 1 - i] : -1; }
  // weight: 0 (last or unranked) to 1 (rank 1), log-scaled, as the
  // shader draws it.
  function weight(i) { return sizes[n - 1 - i] / 255; }

  // ---- the grid: points by cell, each cell's in rank order -----------
  var G = 1, cellStart = null, cellItems;
  function buildGrid() {
    G = Math.max(1, Math.min(1024, Math.ceil(Math.sqrt(n / 4))));
    cellStart = new Int32Array(G * G + 1); cellItems = new Int32Array(n);
    var cellOf = new Int32Array(n);
    for (var i = 0; i < n; i++) { cellOf[i] = cellY(Y(i)) * G + cellX(X(i)); cellStart[cellOf[i] + 1]++; }
    for (var c = 0; c < G * G; c++) cellStart[c + 1] += cellStart[c];
    var fill = cellStart.slice(0, G * G);
    for (i = 0; i < n; i++) cellItems[fill[cellOf[i]]++] = i;
  }
  function cellX(x) { return Math.min(G - 1, Math.max(0, Math.floor((x - minX) / spanX * G))); }
  function cellY(y) { return Math.min(G - 1, Math.max(0, Math.floor((y - minY) / spanY * G))); }

  // ---- view ---------------------------------------------------------
  var view = { cx: 0, cy: 0, scale: 1 }, fitScale = 1, minR = 1;
  function resize() {
    dpr = window.devicePixelRatio || 1;
    W = Math.max(1, window.innerWidth); H = Math.max(1, window.innerHeight);
    [glCanvas, ov].forEach(function (c) {
      var w = Math.round(W * dpr), h = Math.round(H * dpr);
      if (c.width !== w || c.height !== h) { c.width = w; c.height = h; } // a new size clears the canvas
    });
    if (!meta) return;
    var old = fitScale;
    fitScale = Math.min((W - 80) / spanX, (H - 80) / spanY);
    if (!(fitScale > 0)) fitScale = 1;
    minR = Math.min(2.5, Math.max(0.6, 0.04 * Math.sqrt(W * H / Math.max(n, 1))));
    if (api.ready) view.scale *= fitScale / old;
    redraw();
  }
  function toScreen(i) { return [W / 2 + (X(i) - view.cx) * view.scale, H / 2 - (Y(i) - view.cy) * view.scale]; }
  function worldToScreen(x, y) { return [W / 2 + (x - view.cx) * view.scale, H / 2 - (y - view.cy) * view.scale]; }
  function toWorld(sx, sy) { return [view.cx + (sx - W / 2) / view.scale, view.cy - (sy - H / 2) / view.scale]; }
  function boost() { return Math.min(4, Math.max(1, Math.pow(view.scale / fitScale, 0.35))); }
  function radius(i) { return (minR + 6 * weight(i)) * boost(); }
  function clampScale(s) { return Math.min(fitScale * 20000, Math.max(fitScale * 0.5, s)); }

  // ---- WebGL --------------------------------------------------------
  var gl, prog, loc = {}, vao, xyBuf, colorBuf, palTex;
  var VS = "#version 300 es\n" +
    "layout(location = 0) in vec2 a_xy; layout(location = 1) in float a_size; layout(location = 2) in float a_col;\n" +
    "uniform vec2 u_off; uniform vec2 u_mul; uniform vec2 u_center; uniform vec2 u_scale; uniform float u_minR; uniform float u_boost;\n" +
    "uniform float u_dpr; uniform sampler2D u_pal;\n" +
    "out vec4 v_col; out float v_size;\n" +
    "void main() {\n" +
    "  gl_Position = vec4((u_off + a_xy * u_mul - u_center) * u_scale, 0.0, 1.0);\n" +
    "  float s = 2.0 * (u_minR + 6.0 * a_size) * u_boost * u_dpr;\n" +
    "  gl_PointSize = max(1.0, s);\n" +
    "  v_size = s;\n" +
    "  v_col = texelFetch(u_pal, ivec2(int(a_col), 0), 0);\n" +
    "}\n";
  var FS = "#version 300 es\nprecision mediump float;\n" +
    "in vec4 v_col; in float v_size; out vec4 o;\n" +
    "void main() {\n" +
    "  if (v_size < 2.5) { o = vec4(v_col.rgb * 0.75, 0.75); return; }\n" +
    "  vec2 d = gl_PointCoord * 2.0 - 1.0; float r2 = dot(d, d);\n" +
    "  if (r2 > 1.0) discard;\n" +
    "  float rim = 1.0 - 2.0 / v_size;\n" +
    "  o = (v_size > 7.0 && r2 > rim * rim) ? vec4(1.0) : vec4(v_col.rgb, 1.0);\n" +
    "}\n";
  var A_XY = 0, A_SIZE = 1, A_COL = 2; // the shader's attribute locations
  var shaders = [];
  function shader(type, src) {
    var s = gl.createShader(type);
    gl.shaderSource(s, src); gl.compileShader(s);
    shaders.push(s);
    return s;
  }
  // initGL makes the context and has the program compiled and linked
  // while the data is on its way. It asks nothing back: a question (a
  // link status, a uniform's location) waits for the GPU process, and the
  // page's thread is the one that reads the data as it comes.
  function initGL() {
    gl = glCanvas.getContext("webgl2", { antialias: false, alpha: false, preserveDrawingBuffer: true });
    if (!gl) throw new Error("this browser has no WebGL 2");
    prog = gl.createProgram();
    gl.attachShader(prog, shader(gl.VERTEX_SHADER, VS));
    gl.attachShader(prog, shader(gl.FRAGMENT_SHADER, FS));
    gl.linkProgram(prog);
    vao = gl.createVertexArray();
    gl.bindVertexArray(vao);
    xyBuf = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, xyBuf);
    gl.enableVertexAttribArray(A_XY);
    palTex = gl.createTexture();
    gl.bindTexture(gl.TEXTURE_2D, palTex);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
    gl.enable(gl.BLEND);
    gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA);
  }
  // upload checks the program and hands the first step's arrays to WebGL
  // as they came.
  function upload() {
    if (!gl.getProgramParameter(prog, gl.LINK_STATUS)) {
      throw new Error(shaders.map(function (s) { return gl.getShaderInfoLog(s); }).join(" ") + " " + gl.getProgramInfoLog(prog));
    }
    ["u_off", "u_mul", "u_center", "u_scale", "u_minR", "u_boost", "u_dpr", "u_pal"].forEach(function (u) { loc[u] = gl.getUniformLocation(prog, u); });
    gl.bindVertexArray(vao);
    function attr(l, data, size, type) {
      var b = gl.createBuffer();
      gl.bindBuffer(gl.ARRAY_BUFFER, b);
      gl.bufferData(gl.ARRAY_BUFFER, data, gl.STATIC_DRAW);
      gl.enableVertexAttribArray(l);
      gl.vertexAttribPointer(l, size, type, true, 0, 0);
      return b;
    }
    setPositions();
    attr(A_SIZE, sizes, 1, gl.UNSIGNED_BYTE);
    colorBuf = attr(A_COL, colorArrays[colorBy], 1, gl.UNSIGNED_BYTE);
    // a_col is an index into the palette, not normalised.
    gl.vertexAttribPointer(A_COL, 1, gl.UNSIGNED_BYTE, false, 0, 0);
    setPalette();
  }
  // setPositions gives WebGL the best positions at hand: 16-bit ones
  // scaled over the bounds, then the exact ones.
  var posOff = [0, 0], posMul = [1, 1];
  function setPositions() {
    gl.bindVertexArray(vao);
    gl.bindBuffer(gl.ARRAY_BUFFER, xyBuf);
    var l = A_XY;
    if (xy) {
      gl.bufferData(gl.ARRAY_BUFFER, xy, gl.STATIC_DRAW);
      gl.vertexAttribPointer(l, 2, gl.FLOAT, false, 0, 0);
      posOff = [0, 0]; posMul = [1, 1];
    } else {
      gl.bufferData(gl.ARRAY_BUFFER, xy16, gl.STATIC_DRAW);
      gl.vertexAttribPointer(l, 2, gl.UNSIGNED_SHORT, true, 0, 0);
      posOff = [minX, minY]; posMul = [maxX - minX, maxY - minY];
    }
  }
  function coloring() { return meta.colorings.filter(function (c) { return c.by === colorBy; })[0]; }
  function setPalette() {
    var pal = new Uint8Array(256 * 4);
    coloring().legend.forEach(function (e, k) {
      var h = parseInt(e.color.slice(1), 16);
      pal[4 * k] = (h >> 16) & 255; pal[4 * k + 1] = (h >> 8) & 255; pal[4 * k + 2] = h & 255; pal[4 * k + 3] = 255;
    });
    gl.bindTexture(gl.TEXTURE_2D, palTex);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA, 256, 1, 0, gl.RGBA, gl.UNSIGNED_BYTE, pal);
  }
  // setColoring colours by another of meta.colorings, once details.bin
  // has brought its colours.
  function setColoring(by) {
    if (!colorArrays[by]) return details.then(function () { if (colorArrays[by]) setColoring(by); });
    colorBy = by;
    gl.bindBuffer(gl.ARRAY_BUFFER, colorBuf);
    gl.bufferData(gl.ARRAY_BUFFER, colorArrays[by], gl.STATIC_DRAW);
    setPalette(); showLegend(); redraw();
    return Promise.resolve();
  }
  function drawPoints() {
    gl.viewport(0, 0, glCanvas.width, glCanvas.height);
    gl.clearColor(0.984, 0.984, 0.973, 1); gl.clear(gl.COLOR_BUFFER_BIT);
    gl.useProgram(prog); gl.bindVertexArray(vao);
    gl.uniform2f(loc.u_off, posOff[0], posOff[1]); gl.uniform2f(loc.u_mul, posMul[0], posMul[1]);
    gl.uniform2f(loc.u_center, view.cx, view.cy);
    gl.uniform2f(loc.u_scale, 2 * view.scale / W, 2 * view.scale / H);
    gl.uniform1f(loc.u_minR, minR); gl.uniform1f(loc.u_boost, boost()); gl.uniform1f(loc.u_dpr, dpr);
    gl.activeTexture(gl.TEXTURE0); gl.bindTexture(gl.TEXTURE_2D, palTex); gl.uniform1i(loc.u_pal, 0);
    gl.drawArrays(gl.POINTS, 0, n);
  }

  // ---- the overlay: bundles, selected links, labels --------------------
  var showBundles = true, sel = null; // sel: {i, name, ins: [[point, nofollow]], outs: ...}
  // drawBundles draws the links between communities, strength in a dozen
  // steps of width and shade, one path a step: a stroke apiece cost the
  // first frame a tenth of a second.
  var bundleSteps = 12;
  function drawBundles() {
    if (!showBundles || !meta.bundles.length) return;
    var top = meta.bundles[0][2], paths = [];
    for (var k = 0; k < bundleSteps; k++) paths.push(new Path2D());
    for (k = meta.bundles.length - 1; k >= 0; k--) {
      var b = meta.bundles[k], a = meta.communities[b[0]], c = meta.communities[b[1]];
      var p = worldToScreen(a.x, a.y), q = worldToScreen(c.x, c.y), f = Math.sqrt(b[2] / top);
      var mx = (p[0] + q[0]) / 2 - (q[1] - p[1]) * 0.15, my = (p[1] + q[1]) / 2 + (q[0] - p[0]) * 0.15;
      var path = paths[Math.min(bundleSteps - 1, Math.floor(f * bundleSteps))];
      path.moveTo(p[0], p[1]); path.quadraticCurveTo(mx, my, q[0], q[1]);
    }
    ctx.lineCap = "round";
    for (k = 0; k < bundleSteps; k++) {
      var g = (k + 0.5) / bundleSteps;
      ctx.strokeStyle = "rgba(60,60,80," + (0.03 + 0.14 * g).toFixed(3) + ")";
      ctx.lineWidth = 1 + 5 * g;
      ctx.stroke(paths[k]);
    }
  }
  function drawLinks() {
    api.linksDrawn = 0;
    if (!sel) return;
    var s = toScreen(sel.i);
    function lines(list, color, nofollow) {
      ctx.beginPath();
      for (var k = 0; k < list.length; k++) {
        if (list[k][1] !== nofollow) continue;
        var p = toScreen(list[k][0]);
        ctx.moveTo(s[0], s[1]); ctx.lineTo(p[0], p[1]);
        api.linksDrawn++;
      }
      ctx.strokeStyle = color; ctx.lineWidth = nofollow ? 1 : 1.4;
      ctx.setLineDash(nofollow ? [4, 4] : []);
      ctx.stroke();
    }
    lines(sel.ins, "rgba(228,88,11,0.55)", false);
    lines(sel.outs, "rgba(31,111,209,0.55)", false);
    lines(sel.ins, "rgba(150,150,150,0.6)", true);
    lines(sel.outs, "rgba(150,150,150,0.6)", true);
    ctx.setLineDash([]);
  }
  function panelRects() {
    var out = [];
    ["top", "legend", "zoom", "help", "side"].forEach(function (id) {
      var el = document.getElementById(id);
      if (el.hidden) return;
      var r = el.getBoundingClientRect();
      out.push([r.left - 4, r.top - 4, r.right + 4, r.bottom + 4]);
    });
    return out;
  }
  function overlaps(a, b) { return a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]; }
  // labelCandidates: the best-ranked points in view. Zoomed out, the top
  // of the rank order is in view anyway; zoomed in, the few grid cells in
  // view give their best points.
  function labelCandidates() {
    var w0 = toWorld(0, H), w1 = toWorld(W, 0);
    var cx0 = cellX(w0[0]), cx1 = cellX(w1[0]), cy0 = cellY(w0[1]), cy1 = cellY(w1[1]);
    var out = [];
    if (!cellStart || (cx1 - cx0 + 1) * (cy1 - cy0 + 1) > 4000) {
      for (var i = 0; i < n && out.length < 3000 && i < 40000; i++) {
        var p = toScreen(i);
        if (p[0] >= 0 && p[1] >= 0 && p[0] <= W && p[1] <= H) out.push(i);
      }
      return out;
    }
    for (var cy = cy0; cy <= cy1; cy++) for (var cx = cx0; cx <= cx1; cx++) {
      var c = cy * G + cx;
      for (var k = cellStart[c]; k < cellStart[c + 1] && k < cellStart[c] + 6; k++) out.push(cellItems[k]);
    }
    out.sort(function (a, b) { return a - b; });
    return out.slice(0, 3000);
  }
  function drawLabels() {
    var taken = panelRects();
    ctx.textBaseline = "middle"; ctx.lineJoin = "round";
    var maxLabels = Math.round(W * H / 14000), placed = 0;
    function label(i, bold) {
      if (!nameOff) return false;
      var p = toScreen(i), r = radius(i), size = bold ? 14 : 11 + 4 * weight(i);
      ctx.font = (bold ? "600 " : "") + size.toFixed(1) + "px system-ui, sans-serif";
      var text = nameOf(i), w = ctx.measureText(text).width, h = size * 1.2, d = r + 3;
      var cands = [[p[0] + d, p[1] - h / 2], [p[0] - d - w, p[1] - h / 2], [p[0] - w / 2, p[1] - d - h], [p[0] - w / 2, p[1] + d]];
      for (var k = 0; k < cands.length; k++) {
        var b = [cands[k][0], cands[k][1], cands[k][0] + w, cands[k][1] + h];
        if (!bold && (b[0] < 0 || b[1] < 0 || b[2] > W || b[3] > H)) continue;
        var free = true;
        for (var t = 0; t < taken.length && free; t++) if (overlaps(b, taken[t])) free = false;
        if (!free && !bold) continue;
        taken.push(b);
        ctx.lineWidth = 3; ctx.strokeStyle = "rgba(251,251,248,0.95)"; ctx.strokeText(text, b[0], b[1] + h / 2);
        ctx.fillStyle = bold ? "#000" : "#222"; ctx.fillText(text, b[0], b[1] + h / 2);
        return true;
      }
      return false;
    }
    if (sel) {
      var p = toScreen(sel.i), r = radius(sel.i) + 5;
      ctx.beginPath(); ctx.arc(p[0], p[1], r, 0, 2 * Math.PI); ctx.lineWidth = 3; ctx.strokeStyle = "#e4007c"; ctx.stroke();
      ctx.beginPath(); ctx.arc(p[0], p[1], r + 4, 0, 2 * Math.PI); ctx.lineWidth = 1.5; ctx.strokeStyle = "rgba(228,0,124,0.45)"; ctx.stroke();
      label(sel.i, true);
    }
    var cands = labelCandidates();
    for (var k = 0; k < cands.length && placed < maxLabels; k++) {
      if (sel && cands[k] === sel.i) continue;
      if (label(cands[k], false)) placed++;
    }
  }
  function drawOverlay() {
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    drawBundles();
    if (!api.ready || !api.marks.bundles) mark("bundles");
    drawLinks(); drawLabels();
  }

  var pending = false;
  function redraw() {
    if (pending || !api.ready) return;
    pending = true;
    requestAnimationFrame(drawNow);
  }
  function drawNow() {
    pending = false;
    var t = performance.now();
    drawPoints();
    var t1 = performance.now();
    drawOverlay();
    api.drawMs = performance.now() - t; api.pointsMs = t1 - t; api.overlayMs = api.drawMs - api.pointsMs;
    api.frames++;
    scheduleHash();
  }

  // ---- picking and tooltip -------------------------------------------
  function pick(sx, sy) {
    if (!cellStart) return -1;
    var w = toWorld(sx, sy), R = ((minR + 6) * boost() + 4) / view.scale;
    var cx0 = cellX(w[0] - R), cx1 = cellX(w[0] + R), cy0 = cellY(w[1] - R), cy1 = cellY(w[1] + R);
    var best = -1, bestD = Infinity;
    for (var cy = cy0; cy <= cy1; cy++) for (var cx = cx0; cx <= cx1; cx++) {
      var c = cy * G + cx;
      for (var k = cellStart[c]; k < cellStart[c + 1]; k++) {
        var i = cellItems[k], p = toScreen(i), d = Math.hypot(p[0] - sx, p[1] - sy) - radius(i);
        if (d <= 4 && (d < bestD || (d === bestD && i < best))) { best = i; bestD = d; }
      }
    }
    return best;
  }
  var tip = document.getElementById("tip");
  function showTip(i, sx, sy) {
    if (i < 0) { tip.hidden = true; return; }
    tip.replaceChildren();
    var d = document.createElement("div"); d.className = "d"; d.textContent = nameOf(i) || "#" + i; tip.appendChild(d);
    var e = document.createElement("div"), rk = rankOf(i);
    e.textContent = (rk > 0 ? "rank " + rk.toLocaleString("en") : rk === 0 ? "unranked" : "") + " · " +
      coloring().legend[colorArrays[colorBy][n - 1 - i]].label.replace(/ \(\d+\)$/, "");
    tip.appendChild(e);
    tip.hidden = false;
    tip.style.left = Math.min(sx + 14, W - tip.offsetWidth - 4) + "px";
    tip.style.top = Math.min(sy + 14, H - tip.offsetHeight - 4) + "px";
  }

  // ---- pan, zoom, fly -------------------------------------------------
  function zoomAt(sx, sy, f) {
    var before = toWorld(sx, sy);
    view.scale = clampScale(view.scale * f);
    var after = toWorld(sx, sy);
    view.cx += before[0] - after[0]; view.cy += before[1] - after[1];
    redraw();
  }
  var flight = 0;
  function flyTo(x, y, scale, ms) {
    var from = { cx: view.cx, cy: view.cy, ls: Math.log(view.scale) }, to = { cx: x, cy: y, ls: Math.log(clampScale(scale)) };
    var id = ++flight, start = performance.now();
    ms = ms === undefined ? 500 : ms;
    api.flying = true;
    function step(now) {
      if (id !== flight) return;
      var t = ms > 0 ? Math.min(1, (now - start) / ms) : 1, e = t < 0.5 ? 2 * t * t : 1 - Math.pow(-2 * t + 2, 2) / 2;
      view.cx = from.cx + (to.cx - from.cx) * e; view.cy = from.cy + (to.cy - from.cy) * e;
      view.scale = Math.exp(from.ls + (to.ls - from.ls) * e);
      drawNow();
      if (t < 1) requestAnimationFrame(step); else api.flying = false;
    }
    if (document.hidden || ms === 0) { step(start + ms); return; }
    requestAnimationFrame(step);
  }
  function fit() { flyTo((minX + maxX) / 2, (minY + maxY) / 2, fitScale); }

  // ---- selection ------------------------------------------------------
  var side = document.getElementById("side");
  function getJSON(url) { return fetchOK(url).then(function (r) { return r.json(); }); }
  function linkItem(l) {
    var li = document.createElement("li");
    if (l.nofollow) li.className = "nofollow";
    var a = document.createElement("a"); a.href = "/d/" + encodeURIComponent(l.domain); a.textContent = l.domain; li.appendChild(a);
    if (l.rank) { var rk = document.createElement("span"); rk.className = "rk"; rk.textContent = " #" + l.rank.toLocaleString("en"); li.appendChild(rk); }
    if (l.nofollow) li.appendChild(document.createTextNode(" (nofollow)"));
    if (l.point !== null) {
      var b = document.createElement("button"); b.className = "go"; b.textContent = "◎"; b.title = "show " + l.domain + " on the map";
      b.addEventListener("click", function () { select(l.domain, { fly: true }); });
      li.appendChild(b);
    }
    return li;
  }
  function fillPanel(d, ins, outs) {
    var h = document.getElementById("sel-name");
    h.replaceChildren();
    var a = document.createElement("a"); a.href = "/d/" + encodeURIComponent(d.domain); a.id = "sel-page"; a.textContent = d.domain; h.appendChild(a);
    var facts = [];
    facts.push(d.rank ? "rank " + d.rank.toLocaleString("en") + (d.move ? (d.move > 0 ? " (▲ " + d.move + ")" : " (▼ " + (-d.move) + ")") : "") : "unranked");
    facts.push("tier " + d.tier);
    facts.push(d.in_domains.toLocaleString("en") + " linking domains");
    if (d.community) facts.push("community " + d.community.id + " (" + d.community.top.slice(0, 2).join(", ") + ")");
    if (d.link_words.length) facts.push("link words: " + d.link_words.map(function (w) { return w.word; }).join(", "));
    if (d.opted_out) facts.push("opted out");
    document.getElementById("sel-facts").textContent = facts.join(" · ");
    document.getElementById("in-count").textContent = "(" + ins.total.toLocaleString("en") + ")";
    document.getElementById("out-count").textContent = "(" + outs.total.toLocaleString("en") + ")";
    var il = document.getElementById("in-list"), ol = document.getElementById("out-list");
    il.replaceChildren(); ol.replaceChildren();
    ins.items.slice(0, 100).forEach(function (l) { il.appendChild(linkItem(l)); });
    outs.items.slice(0, 100).forEach(function (l) { ol.appendChild(linkItem(l)); });
    side.hidden = false;
  }
  // neighbourhood: a view centred on point i showing most of its linked
  // points nearby (the 70th percentile of their distances), so that a
  // search keeps the domain's surroundings in view.
  function neighbourhoodScale(i, pts) {
    var x = X(i), y = Y(i), ds = [];
    pts.forEach(function (p) { ds.push(Math.hypot(X(p) - x, Y(p) - y)); });
    ds.sort(function (a, b) { return a - b; });
    var r = ds.length ? ds[Math.min(ds.length - 1, Math.floor(ds.length * 0.7))] : 0;
    if (!(r > 0)) return fitScale * 8;
    return Math.max(fitScale * 1.5, Math.min(W, H) * 0.42 / r);
  }
  var selSeq = 0;
  // select finds the domain (through the search API, which also reduces a
  // host or URL to its domain), fetches its report and links, draws them
  // and lists them. o.fly: fly to its neighbourhood; o.keepView: stay.
  function select(q, o) {
    o = o || {};
    var seq = ++selSeq;
    api.busy++;
    return getJSON("/api/search?q=" + encodeURIComponent(q)).then(function (res) {
      var hit = res.hits[0];
      if (!hit || (o.exact && hit.domain !== q)) { msg.textContent = "“" + q + "” is not on the map"; return null; }
      var dom = encodeURIComponent(hit.domain);
      return Promise.all([getJSON("/api/d/" + dom), getJSON("/api/d/" + dom + "/links?dir=in&limit=2000"),
        getJSON("/api/d/" + dom + "/links?dir=out&limit=2000")]).then(function (all) {
        if (seq !== selSeq) return null;
        var d = all[0], ins = all[1], outs = all[2];
        msg.textContent = "";
        fillPanel(d, ins, outs);
        if (d.point === null) { msg.textContent = d.domain + " is not placed on the map"; sel = null; api.selected = d.domain; redraw(); return d.domain; }
        function pts(list) { return list.items.filter(function (l) { return l.point !== null; }).map(function (l) { return [l.point, l.nofollow]; }); }
        sel = { i: d.point, name: d.domain, ins: pts(ins), outs: pts(outs) };
        api.selected = d.domain;
        document.getElementById("search").value = d.domain;
        if (o.fly) {
          var near = sel.ins.concat(sel.outs).map(function (p) { return p[0]; });
          flyTo(X(d.point), Y(d.point), neighbourhoodScale(d.point, near), o.ms);
        } else redraw();
        writeHash();
        return d.domain;
      });
    }).catch(function (e) { msg.textContent = String(e.message || e); return null; })
      .finally(function () { api.busy--; });
  }
  function unselect() { sel = null; api.selected = null; side.hidden = true; writeHash(); redraw(); }

  // ---- permalink: #d=example.com&x=..&y=..&z=.. (z: zoom over the whole map)
  var hashTimer = 0;
  function hashNow() {
    var p = new URLSearchParams();
    if (api.selected) p.set("d", api.selected);
    p.set("x", view.cx.toPrecision(7)); p.set("y", view.cy.toPrecision(7)); p.set("z", (view.scale / fitScale).toPrecision(5));
    if (colorBy !== meta.colorings[0].by) p.set("c", colorBy);
    return "#" + p.toString();
  }
  function writeHash() { if (api.ready) history.replaceState(null, "", hashNow()); }
  function scheduleHash() { if (!hashTimer) hashTimer = setTimeout(function () { hashTimer = 0; writeHash(); }, 250); }
  // readHash applies the permalink: the view at once, the colouring and
  // the selection when they can be.
  function readHash() {
    var p = new URLSearchParams(location.hash.slice(1));
    var x = parseFloat(p.get("x")), y = parseFloat(p.get("y")), z = parseFloat(p.get("z"));
    var c = p.get("c");
    var hasView = isFinite(x) && isFinite(y) && z > 0;
    if (hasView) { view.cx = x; view.cy = y; view.scale = clampScale(z * fitScale); }
    var d = p.get("d");
    var colored = c && c !== colorBy && meta.colorings.some(function (k) { return k.by === c; }) ? setColoring(c) : Promise.resolve();
    return colored.then(function () { return d ? select(d, { fly: !hasView, ms: 0 }) : null; });
  }

  // ---- search box -----------------------------------------------------
  var input = document.getElementById("search"), list = document.getElementById("suggest");
  var shown = [], active = -1, sugSeq = 0, sugTimer = 0;
  function showSuggestions() {
    var q = input.value.trim(), seq = ++sugSeq;
    if (!q) { list.replaceChildren(); shown = []; return; }
    getJSON("/api/search?q=" + encodeURIComponent(q)).then(function (res) {
      if (seq !== sugSeq) return;
      shown = res.hits; active = -1;
      list.replaceChildren();
      shown.forEach(function (h) {
        var li = document.createElement("li"); li.textContent = h.domain; li.setAttribute("role", "option");
        var rk = document.createElement("span"); rk.className = "rk"; rk.textContent = h.rank ? "#" + h.rank.toLocaleString("en") : "unranked";
        li.appendChild(rk);
        li.addEventListener("mousedown", function (e) { e.preventDefault(); go(h.domain); });
        list.appendChild(li);
      });
    });
  }
  function go(domain) { clearTimeout(sugTimer); list.replaceChildren(); shown = []; ++sugSeq; input.blur(); return select(domain, { fly: true }); }
  api.search = function (q) { return q.trim() ? go(q.trim()) : Promise.resolve(null); };
  input.addEventListener("input", function () { clearTimeout(sugTimer); sugTimer = setTimeout(showSuggestions, 120); });
  input.addEventListener("keydown", function (e) {
    if (e.key === "Enter") { e.preventDefault(); go(active >= 0 ? shown[active].domain : input.value.trim()); }
    else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      if (!shown.length) return;
      active = (active + (e.key === "ArrowDown" ? 1 : shown.length - 1)) % shown.length;
      Array.prototype.forEach.call(list.children, function (li, k) { li.classList.toggle("active", k === active); });
    } else if (e.key === "Escape") { list.replaceChildren(); shown = []; input.blur(); ov.focus(); }
  });
  input.addEventListener("blur", function () { setTimeout(function () { list.replaceChildren(); }, 150); });

  // ---- legend ---------------------------------------------------------
  var legendTitles = { community: "community (named by its top domains)", tier: "revisit tier", tld: "top-level domain", operator: "network operator" };
  function showLegend() {
    var rows = document.getElementById("legend-rows");
    rows.replaceChildren();
    coloring().legend.forEach(function (e) {
      var row = document.createElement("div"), sw = document.createElement("span");
      row.className = "row"; sw.className = "sw"; sw.style.background = e.color; row.title = e.label;
      row.appendChild(sw); row.appendChild(document.createTextNode(e.label)); rows.appendChild(row);
    });
  }

  // ---- events ---------------------------------------------------------
  var drag = null;
  function wireEvents() {
    ov.addEventListener("wheel", function (e) {
      e.preventDefault();
      zoomAt(e.clientX, e.clientY, Math.exp(-e.deltaY * (e.deltaMode === 1 ? 0.05 : 0.0015)));
    }, { passive: false });
    ov.addEventListener("pointerdown", function (e) {
      ov.focus();
      drag = { x: e.clientX, y: e.clientY, cx: view.cx, cy: view.cy, moved: false };
      ov.setPointerCapture(e.pointerId); ov.classList.add("dragging"); showTip(-1);
    });
    ov.addEventListener("pointermove", function (e) {
      if (drag) {
        var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
        if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
        view.cx = drag.cx - dx / view.scale; view.cy = drag.cy + dy / view.scale;
        redraw();
        return;
      }
      showTip(pick(e.clientX, e.clientY), e.clientX, e.clientY);
    });
    ov.addEventListener("pointerup", function (e) {
      ov.classList.remove("dragging");
      if (drag && !drag.moved) {
        var i = pick(e.clientX, e.clientY);
        if (i >= 0 && nameOff) select(nameOf(i), { exact: true }); else if (i < 0) unselect();
      }
      drag = null;
    });
    ov.addEventListener("pointerleave", function () { showTip(-1); });
    ov.addEventListener("dblclick", function (e) { zoomAt(e.clientX, e.clientY, 2); });
    document.getElementById("zin").onclick = function () { zoomAt(W / 2, H / 2, 1.6); };
    document.getElementById("zout").onclick = function () { zoomAt(W / 2, H / 2, 1 / 1.6); };
    document.getElementById("zfit").onclick = fit;
    document.getElementById("close").onclick = unselect;
    document.getElementById("bundles").onchange = function (e) { showBundles = e.target.checked; redraw(); };
    var colorSel = document.getElementById("colorby");
    meta.colorings.forEach(function (c) {
      var o = document.createElement("option"); o.value = c.by; o.textContent = legendTitles[c.by] || c.by; colorSel.appendChild(o);
    });
    colorSel.value = colorBy;
    colorSel.onchange = function () { setColoring(colorSel.value); writeHash(); };
    window.addEventListener("resize", resize);
    window.addEventListener("hashchange", function () { if (location.hash !== hashNow()) readHash().then(redraw); });
    // Keyboard: arrows pan, + and - zoom, 0 the whole map, / find, Esc
    // unselect. Not while typing in a field.
    document.addEventListener("keydown", function (e) {
      var t = e.target;
      if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      var step = 0.15 / view.scale, k = e.key;
      if (k === "/") { e.preventDefault(); input.focus(); }
      else if (k === "Escape") unselect();
      else if (k === "ArrowLeft") { view.cx -= step * W; redraw(); }
      else if (k === "ArrowRight") { view.cx += step * W; redraw(); }
      else if (k === "ArrowUp") { view.cy += step * H; redraw(); }
      else if (k === "ArrowDown") { view.cy -= step * H; redraw(); }
      else if (k === "+" || k === "=") zoomAt(W / 2, H / 2, 1.5);
      else if (k === "-" || k === "_") zoomAt(W / 2, H / 2, 1 / 1.5);
      else if (k === "0") fit();
      else return;
      if (k.indexOf("Arrow") === 0) e.preventDefault();
    });
  }

  // ---- for tests and benchmarks ---------------------------------------
  // benchDraw draws k frames, waiting for the GPU each time, and returns
  // the mean milliseconds of one; benchPan does the same while panning.
  api.benchDraw = function (k) {
    var t = performance.now();
    for (var j = 0; j < k; j++) { drawNow(); gl.finish(); }
    return (performance.now() - t) / k;
  };
  api.benchPan = function (k) {
    var t = performance.now(), worst = 0;
    for (var j = 0; j < k; j++) {
      var f = performance.now();
      view.cx += 3 / view.scale; view.cy += 2 / view.scale;
      drawNow(); gl.finish();
      worst = Math.max(worst, performance.now() - f);
    }
    return { mean: (performance.now() - t) / k, worst: worst };
  };
  api.screenOf = function (name) {
    for (var i = 0; nameOff && i < n; i++) if (nameOf(i) === name) return toScreen(i);
    return null;
  };
  // inkShare: the share of the points' canvas not left the background.
  api.inkShare = function () {
    var w = glCanvas.width, h = glCanvas.height, px = new Uint8Array(w * h * 4), ink = 0;
    gl.readPixels(0, 0, w, h, gl.RGBA, gl.UNSIGNED_BYTE, px);
    for (var k = 0; k < px.length; k += 4) if (px[k] < 240 || px[k + 1] < 240 || px[k + 2] < 236) ink++;
    return ink / (w * h);
  };
  api.view = function () { return { cx: view.cx, cy: view.cy, scale: view.scale, fit: fitScale }; };
  api.colorBy = function () { return colorBy; };

  // Start-up: the context and program while the first step is on its
  // way (preloaded), the first frame, then the rest.
  var loaded = load(0);
  try {
    initGL(); resize();
    // The overlay's first strokes and text set its canvas up: that too
    // while waiting.
    ctx.font = "11px system-ui, sans-serif"; ctx.measureText("example.com");
    ctx.beginPath(); ctx.moveTo(0, 0); ctx.quadraticCurveTo(2, 2, 4, 0); ctx.strokeStyle = "rgba(0,0,0,0.01)"; ctx.stroke();
    ctx.clearRect(0, 0, 8, 8);
  } catch (e) { loaded = Promise.reject(e); }
  mark("gl");
  loaded.then(function () {
    upload();
    mark("upload");
    view.cx = (minX + maxX) / 2; view.cy = (minY + maxY) / 2;
    resize();
    view.scale = fitScale;
    showLegend();
    wireEvents();
    mark("dom");
    api.count = n;
    api.ready = true;
    var hash = readHash();
    drawPoints();
    mark("points-drawn");
    drawNow();
    api.loadMs = Math.round(performance.now() - t0);
    api.readyAt = Math.round(performance.now()); // since navigation started
    mark("drawn");
    requestAnimationFrame(function () { mark("frame"); });
    // After the first frame: labels, tooltips, clicks, other colourings
    // and exact positions need these; the picture does not.
    loadDetails().then(detailsDone.ok, detailsDone.fail);
    var names = loadNames().then(function () {
      api.namesMs = Math.round(performance.now() - t0);
      api.namesReady = true;
      redraw();
    });
    return Promise.all([hash, details, names]);
  }).then(function () { api.settled = true; redraw(); }).catch(function (e) {
    msg.textContent = "The map could not be drawn: " + (e && e.message ? e.message : e);
    api.error = String(e && e.message ? e.message : e);
  });
})();
