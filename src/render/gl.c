/*
 * render/gl.c — OpenGL ES 3 backend over EGL, headless.
 *
 * EGL on Mesa's surfaceless platform (EGL_MESA_platform_surfaceless) gives a
 * context with no window system and no GPU: llvmpipe rasterises on the CPU.
 * We render into framebuffer objects, never a window:
 *   1. shadow pass: the casters (body, colliders) into a 2048² depth texture
 *      from the orthographic light (polygon offset against acne);
 *   2. colour pass: ground then objects into a 4x multisampled RGBA8 + depth
 *      framebuffer; the fragment shader applies the shared lighting model
 *      (render_internal.h) with a 5x5 percentage-closer filter over the
 *      hardware-filtered shadow comparisons (sampler2DShadow, GL_LINEAR),
 *      i.e. soft shadow edges (a fast frame, for a window: one hardware-
 *      filtered comparison and no multisampling);
 *   3. resolve (blit) to a single-sample framebuffer, glReadPixels, flip rows.
 * The output is premultiplied RGBA: cleared to 0, the ground writes
 * (colour * a, a) with a fading toward its edge.
 *
 * The EGL display is a process-wide singleton: eglTerminate would invalidate
 * the contexts of every other renderer (and unload the driver under the
 * feet of leak checkers), so a renderer destroys only its own context and
 * the display stays initialised until the process exits (eglInitialize on an
 * initialised display is a no-op, so renderers can come and go).  Mesa's
 * screen threads (rasteriser, compute pool) therefore live until exit, idle.
 *
 * Every EGL and GL call runs on one thread the renderer owns: rn_gl_create
 * starts it (it sets up the context, which then stays current there),
 * rn_gl_draw hands it a frame and waits, rn_gl_destroy tears the context down
 * on it and joins it.  The reason is thread-local storage: the driver lives in
 * libraries EGL loads with dlopen (llvmpipe's libLLVM), whose TLS is allocated
 * lazily on the heap for each thread that touches it — while shaders compile.
 * On the renderer's thread that storage ends when the renderer does; on the
 * caller's thread (usually the main thread, still alive when the process
 * exits) it would outlive it.  That matters to the leak checker: the ASan
 * runtimes of GCC <= 13 and LLVM <= 16 size a dynamic TLS block that happens to
 * start 16 bytes into a page from a pre-2.25 glibc header read just before it,
 * which is the allocator's own chunk header, and the exit-time scan of that
 * bogus range crashes ("Tracer caught signal 11") — by chance, wherever the
 * heap put the block (google/sanitizers#1322).  The caller's thread never holds
 * driver TLS (tests/test_render.c checks it).
 *
 * Invariant: only the render thread touches dpy, ctx and the GL objects; the
 * caller side touches only the job fields, under the lock.
 */
#define _POSIX_C_SOURCE 200809L /* pthread_sigmask */
#include "render/render_internal.h"

#ifdef DEFO_RENDER_HAVE_GL

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl3.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

typedef enum { GL_JOB_NONE, GL_JOB_DRAW, GL_JOB_QUIT } gl_job;

struct rn_gl {
    /* hand-over between the caller and the render thread (under lock) */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int ready;  /* setup finished (status says how) */
    gl_job job; /* posted by the caller; NONE again when done */
    const rn_frame *frame;
    unsigned char *rgba;
    defo_status status; /* of setup, then of the last job */
    char message[1024]; /* defo_last_error() of the render thread when status < 0 */
    char name[192];     /* "opengl: <GL_RENDERER>" */
    /* render thread only */
    EGLDisplay dpy;
    EGLContext ctx;
    GLuint prog, depth_prog;
    GLint u_vp, u_lvp, u_eye, u_light, u_texel, u_spec, u_shadow, u_depth_lvp, u_pcf;
    GLuint vao, vbo;
    GLuint shadow_fbo, shadow_tex;
    GLuint ms_fbo, ms_color, ms_depth, res_fbo, res_color;
    int fb_w, fb_h, fb_samples, samples;
};

static const char *vs_src = "#version 300 es\n"
                            "layout(location=0) in vec3 a_pos;\n"
                            "layout(location=1) in vec3 a_nrm;\n"
                            "layout(location=2) in vec4 a_col;\n"
                            "uniform mat4 u_vp;\n"
                            "uniform mat4 u_lvp;\n"
                            "out vec3 v_pos; out vec3 v_nrm; out vec4 v_col; out vec4 v_lpos;\n"
                            "void main() {\n"
                            "  v_pos = a_pos; v_nrm = a_nrm; v_col = a_col;\n"
                            "  v_lpos = u_lvp * vec4(a_pos, 1.0);\n"
                            "  gl_Position = u_vp * vec4(a_pos, 1.0);\n"
                            "}\n";

static const char *fs_src =
    "#version 300 es\n"
    "precision highp float;\n"
    "precision highp sampler2DShadow;\n"
    "in vec3 v_pos; in vec3 v_nrm; in vec4 v_col; in vec4 v_lpos;\n"
    "uniform vec3 u_eye; uniform vec3 u_light; uniform float u_texel; uniform float u_spec;\n"
    "uniform int u_pcf;\n"
    "uniform sampler2DShadow u_shadow;\n"
    "out vec4 o_col;\n"
    "void main() {\n"
    "  vec3 n = normalize(v_nrm);\n"
    "  vec3 V = normalize(u_eye - v_pos);\n"
    "  if (dot(n, V) < 0.0) n = -n;\n"
    "  vec3 lp = v_lpos.xyz / v_lpos.w * 0.5 + 0.5;\n"
    "  float sh = 1.0;\n"
    "  if (lp.x > 0.0 && lp.x < 1.0 && lp.y > 0.0 && lp.y < 1.0 && lp.z < 1.0) {\n"
    "    sh = 0.0;\n"
    "    for (int i = -u_pcf; i <= u_pcf; i++)\n"
    "      for (int j = -u_pcf; j <= u_pcf; j++)\n"
    "        sh += texture(u_shadow, vec3(lp.xy + vec2(float(i), float(j)) * 1.5 * u_texel,\n"
    "                                     lp.z - 0.0015));\n"
    "    sh /= float((2 * u_pcf + 1) * (2 * u_pcf + 1));\n"
    "  }\n"
    "  float ndl = max(dot(n, u_light), 0.0);\n"
    "  float amb = 0.24 + 0.12 * n.z + 0.22 * max(dot(n, V), 0.0);\n"
    "  vec3 h = normalize(V + u_light);\n"
    "  float sp = u_spec * pow(max(dot(n, h), 0.0), 40.0) * sh;\n"
    "  vec3 c = v_col.rgb * (amb + 0.62 * ndl * sh) + vec3(sp);\n"
    "  o_col = vec4(min(c, vec3(1.0)) * v_col.a, v_col.a);\n"
    "}\n";

static const char *depth_vs_src = "#version 300 es\n"
                                  "layout(location=0) in vec3 a_pos;\n"
                                  "uniform mat4 u_lvp;\n"
                                  "void main() { gl_Position = u_lvp * vec4(a_pos, 1.0); }\n";
static const char *depth_fs_src = "#version 300 es\n"
                                  "precision mediump float;\n"
                                  "out vec4 o_col;\n"
                                  "void main() { o_col = vec4(1.0); }\n";

static GLuint compile(GLenum type, const char *src, char *log, size_t log_size) {
    GLuint sh = glCreateShader(type);
    glShaderSource(sh, 1, &src, NULL);
    glCompileShader(sh);
    GLint ok = 0;
    glGetShaderiv(sh, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        glGetShaderInfoLog(sh, (GLsizei)log_size, NULL, log);
        glDeleteShader(sh);
        return 0;
    }
    return sh;
}

static GLuint link_program(const char *vs, const char *fs) {
    char log[512] = "";
    GLuint v = compile(GL_VERTEX_SHADER, vs, log, sizeof log);
    GLuint f = v ? compile(GL_FRAGMENT_SHADER, fs, log, sizeof log) : 0;
    if (!v || !f) {
        if (v) glDeleteShader(v);
        defo_error(DEFO_ERR_INTERNAL, "OpenGL shader compilation failed: %s", log);
        return 0;
    }
    GLuint p = glCreateProgram();
    glAttachShader(p, v);
    glAttachShader(p, f);
    glLinkProgram(p);
    glDeleteShader(v);
    glDeleteShader(f);
    GLint ok = 0;
    glGetProgramiv(p, GL_LINK_STATUS, &ok);
    if (!ok) {
        glGetProgramInfoLog(p, (GLsizei)sizeof log, NULL, log);
        glDeleteProgram(p);
        defo_error(DEFO_ERR_INTERNAL, "OpenGL program link failed: %s", log);
        return 0;
    }
    return p;
}

static void release_targets(rn_gl *gl) {
    if (gl->ms_fbo) glDeleteFramebuffers(1, &gl->ms_fbo);
    if (gl->res_fbo) glDeleteFramebuffers(1, &gl->res_fbo);
    if (gl->ms_color) glDeleteRenderbuffers(1, &gl->ms_color);
    if (gl->ms_depth) glDeleteRenderbuffers(1, &gl->ms_depth);
    if (gl->res_color) glDeleteRenderbuffers(1, &gl->res_color);
    gl->ms_fbo = gl->res_fbo = gl->ms_color = gl->ms_depth = gl->res_color = 0;
    gl->fb_w = gl->fb_h = 0;
}

/* Render thread: release every GL object and the context (current here). */
static void gl_teardown(rn_gl *gl) {
    if (gl->ctx != EGL_NO_CONTEXT) {
        release_targets(gl);
        if (gl->shadow_fbo) glDeleteFramebuffers(1, &gl->shadow_fbo);
        if (gl->shadow_tex) glDeleteTextures(1, &gl->shadow_tex);
        if (gl->vbo) glDeleteBuffers(1, &gl->vbo);
        if (gl->vao) glDeleteVertexArrays(1, &gl->vao);
        if (gl->prog) glDeleteProgram(gl->prog);
        if (gl->depth_prog) glDeleteProgram(gl->depth_prog);
        eglMakeCurrent(gl->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
        eglDestroyContext(gl->dpy, gl->ctx);
        gl->ctx = EGL_NO_CONTEXT;
    }
    eglReleaseThread();
}

/* Render thread: display, context (left current on success), programs and
 * the shadow map.  On failure everything is released again. */
static defo_status gl_setup(rn_gl *gl) {
    PFNEGLGETPLATFORMDISPLAYEXTPROC get_display =
        (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
    const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
    if (get_display && client && strstr(client, "EGL_MESA_platform_surfaceless"))
        gl->dpy = get_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
    EGLint major = 0, minor = 0;
    if (gl->dpy == EGL_NO_DISPLAY || !eglInitialize(gl->dpy, &major, &minor)) {
        EGLint err = eglGetError();
        eglReleaseThread();
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "OpenGL rendering unavailable: no EGL surfaceless display (EGL error "
                          "0x%x; install libegl-mesa0 and libgl1-mesa-dri)",
                          (unsigned)err);
    }
    defo_status s = DEFO_OK;
    EGLConfig cfg = EGL_NO_CONFIG_KHR;
    const char *ext = eglQueryString(gl->dpy, EGL_EXTENSIONS);
    if (!ext || !strstr(ext, "EGL_KHR_no_config_context")) {
        const EGLint attr[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT, EGL_NONE};
        EGLint n = 0;
        if (!eglChooseConfig(gl->dpy, attr, &cfg, 1, &n) || n < 1) cfg = NULL;
    }
    if (!eglBindAPI(EGL_OPENGL_ES_API)) {
        s = defo_error(DEFO_ERR_UNSUPPORTED, "OpenGL rendering unavailable: no OpenGL ES in EGL");
    } else {
        const EGLint ca[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 0, EGL_NONE};
        gl->ctx = eglCreateContext(gl->dpy, cfg, EGL_NO_CONTEXT, ca);
        if (gl->ctx == EGL_NO_CONTEXT ||
            !eglMakeCurrent(gl->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, gl->ctx))
            s = defo_error(DEFO_ERR_UNSUPPORTED,
                           "OpenGL rendering unavailable: cannot create a surfaceless OpenGL ES 3 "
                           "context (EGL error 0x%x)",
                           (unsigned)eglGetError());
    }
    if (s >= 0) {
        gl->prog = link_program(vs_src, fs_src);
        gl->depth_prog = gl->prog ? link_program(depth_vs_src, depth_fs_src) : 0;
        if (!gl->prog || !gl->depth_prog) s = defo_last_status();
    }
    if (s >= 0) {
        gl->u_vp = glGetUniformLocation(gl->prog, "u_vp");
        gl->u_lvp = glGetUniformLocation(gl->prog, "u_lvp");
        gl->u_eye = glGetUniformLocation(gl->prog, "u_eye");
        gl->u_light = glGetUniformLocation(gl->prog, "u_light");
        gl->u_texel = glGetUniformLocation(gl->prog, "u_texel");
        gl->u_spec = glGetUniformLocation(gl->prog, "u_spec");
        gl->u_shadow = glGetUniformLocation(gl->prog, "u_shadow");
        gl->u_pcf = glGetUniformLocation(gl->prog, "u_pcf");
        gl->u_depth_lvp = glGetUniformLocation(gl->depth_prog, "u_lvp");
        glGenVertexArrays(1, &gl->vao);
        glGenBuffers(1, &gl->vbo);
        glBindVertexArray(gl->vao);
        glBindBuffer(GL_ARRAY_BUFFER, gl->vbo);
        glEnableVertexAttribArray(0);
        glEnableVertexAttribArray(1);
        glEnableVertexAttribArray(2);
        glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, sizeof(rn_vertex),
                              (const void *)offsetof(rn_vertex, p));
        glVertexAttribPointer(1, 3, GL_FLOAT, GL_FALSE, sizeof(rn_vertex),
                              (const void *)offsetof(rn_vertex, n));
        glVertexAttribPointer(2, 4, GL_FLOAT, GL_FALSE, sizeof(rn_vertex),
                              (const void *)offsetof(rn_vertex, c));
        /* shadow map: depth texture with hardware comparison */
        glGenTextures(1, &gl->shadow_tex);
        glBindTexture(GL_TEXTURE_2D, gl->shadow_tex);
        glTexImage2D(GL_TEXTURE_2D, 0, GL_DEPTH_COMPONENT24, RN_SHADOW_SIZE, RN_SHADOW_SIZE, 0,
                     GL_DEPTH_COMPONENT, GL_UNSIGNED_INT, NULL);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_COMPARE_MODE, GL_COMPARE_REF_TO_TEXTURE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_COMPARE_FUNC, GL_LEQUAL);
        glGenFramebuffers(1, &gl->shadow_fbo);
        glBindFramebuffer(GL_FRAMEBUFFER, gl->shadow_fbo);
        glFramebufferTexture2D(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_TEXTURE_2D, gl->shadow_tex,
                               0);
        GLenum none = GL_NONE;
        glDrawBuffers(1, &none);
        if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE)
            s = defo_error(DEFO_ERR_UNSUPPORTED, "OpenGL: shadow framebuffer incomplete");
        GLint max_samples = 0;
        glGetIntegerv(GL_MAX_SAMPLES, &max_samples);
        gl->samples = max_samples >= 4 ? 4 : 0;
        snprintf(gl->name, sizeof gl->name, "opengl: %s", (const char *)glGetString(GL_RENDERER));
        glBindFramebuffer(GL_FRAMEBUFFER, 0);
    }
    if (s < 0) gl_teardown(gl);
    return s;
}

static defo_status ensure_targets(rn_gl *gl, int w, int h, int samples) {
    if (gl->fb_w == w && gl->fb_h == h && gl->fb_samples == samples) return DEFO_OK;
    release_targets(gl);
    glGenRenderbuffers(1, &gl->ms_color);
    glBindRenderbuffer(GL_RENDERBUFFER, gl->ms_color);
    glRenderbufferStorageMultisample(GL_RENDERBUFFER, samples, GL_RGBA8, w, h);
    glGenRenderbuffers(1, &gl->ms_depth);
    glBindRenderbuffer(GL_RENDERBUFFER, gl->ms_depth);
    glRenderbufferStorageMultisample(GL_RENDERBUFFER, samples, GL_DEPTH_COMPONENT24, w, h);
    glGenFramebuffers(1, &gl->ms_fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, gl->ms_fbo);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, gl->ms_color);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER, gl->ms_depth);
    int ok = glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
    glGenRenderbuffers(1, &gl->res_color);
    glBindRenderbuffer(GL_RENDERBUFFER, gl->res_color);
    glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, w, h);
    glGenFramebuffers(1, &gl->res_fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, gl->res_fbo);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, gl->res_color);
    ok = ok && glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
    if (!ok) {
        release_targets(gl);
        return defo_error(DEFO_ERR_UNSUPPORTED, "OpenGL: cannot create a %dx%d framebuffer", w, h);
    }
    gl->fb_w = w;
    gl->fb_h = h;
    gl->fb_samples = samples;
    return DEFO_OK;
}

static void draw_list(const rn_list *l) {
    if (l->count == 0) return;
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(l->count * sizeof(rn_vertex)), l->v, GL_STREAM_DRAW);
    glDrawArrays(GL_TRIANGLES, 0, (GLsizei)l->count);
}

/* Render thread: one frame (the context is current). */
static defo_status gl_draw(rn_gl *gl, const rn_frame *f, unsigned char *rgba) {
    while (glGetError() != GL_NO_ERROR) {
    }
    defo_status s = ensure_targets(gl, f->width, f->height, f->fast ? 0 : gl->samples);
    if (s < 0) return s;
    glBindVertexArray(gl->vao);
    glBindBuffer(GL_ARRAY_BUFFER, gl->vbo);
    glEnable(GL_DEPTH_TEST);
    glDepthFunc(GL_LESS);
    glDisable(GL_CULL_FACE);
    glDisable(GL_BLEND);

    /* 1. shadow map */
    glBindFramebuffer(GL_FRAMEBUFFER, gl->shadow_fbo);
    glViewport(0, 0, RN_SHADOW_SIZE, RN_SHADOW_SIZE);
    glClearDepthf(1.0f);
    glClear(GL_DEPTH_BUFFER_BIT);
    glUseProgram(gl->depth_prog);
    glUniformMatrix4fv(gl->u_depth_lvp, 1, GL_FALSE, f->light_proj);
    glEnable(GL_POLYGON_OFFSET_FILL);
    glPolygonOffset(2.0f, 4.0f);
    draw_list(f->objects);
    glDisable(GL_POLYGON_OFFSET_FILL);

    /* 2. colour pass */
    glBindFramebuffer(GL_FRAMEBUFFER, gl->ms_fbo);
    glViewport(0, 0, f->width, f->height);
    glClearColor(0, 0, 0, 0);
    glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
    glUseProgram(gl->prog);
    glUniformMatrix4fv(gl->u_vp, 1, GL_FALSE, f->view_proj);
    glUniformMatrix4fv(gl->u_lvp, 1, GL_FALSE, f->light_proj);
    glUniform3fv(gl->u_eye, 1, f->eye);
    glUniform3fv(gl->u_light, 1, f->light);
    glUniform1f(gl->u_texel, f->shadow_texel);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, gl->shadow_tex);
    glUniform1i(gl->u_shadow, 0);
    glUniform1i(gl->u_pcf, f->fast ? 0 : 2);
    glUniform1f(gl->u_spec, 0.0f);
    draw_list(f->ground);
    glUniform1f(gl->u_spec, 0.25f);
    draw_list(f->objects);

    /* 3. resolve and read back */
    glBindFramebuffer(GL_READ_FRAMEBUFFER, gl->ms_fbo);
    glBindFramebuffer(GL_DRAW_FRAMEBUFFER, gl->res_fbo);
    glBlitFramebuffer(0, 0, f->width, f->height, 0, 0, f->width, f->height, GL_COLOR_BUFFER_BIT,
                      GL_NEAREST);
    glBindFramebuffer(GL_READ_FRAMEBUFFER, gl->res_fbo);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, f->width, f->height, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
    GLenum err = glGetError();
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    if (err != GL_NO_ERROR)
        return defo_error(DEFO_ERR_INTERNAL, "OpenGL error 0x%x while drawing", (unsigned)err);
    /* GL rows go bottom to top */
    size_t row = (size_t)f->width * 4;
    for (int y = 0; y < f->height / 2; y++) {
        unsigned char *a = rgba + (size_t)y * row, *b = rgba + (size_t)(f->height - 1 - y) * row;
        for (size_t k = 0; k < row; k++) {
            unsigned char t = a[k];
            a[k] = b[k];
            b[k] = t;
        }
    }
    return DEFO_OK;
}

/* Render thread, finishing setup or a job: publish its status and message. */
static void post_result(rn_gl *gl, defo_status s) {
    pthread_mutex_lock(&gl->lock);
    gl->status = s;
    snprintf(gl->message, sizeof gl->message, "%s", s < 0 ? defo_last_error() : "");
    gl->ready = 1;
    gl->job = GL_JOB_NONE;
    pthread_cond_broadcast(&gl->cond);
    pthread_mutex_unlock(&gl->lock);
}

static void *render_thread(void *arg) {
    rn_gl *gl = arg;
    defo_status s = gl_setup(gl);
    post_result(gl, s);
    if (s < 0) return NULL; /* setup released everything */
    for (;;) {
        pthread_mutex_lock(&gl->lock);
        while (gl->job == GL_JOB_NONE) pthread_cond_wait(&gl->cond, &gl->lock);
        gl_job job = gl->job;
        pthread_mutex_unlock(&gl->lock);
        if (job == GL_JOB_QUIT) break;
        post_result(gl, gl_draw(gl, gl->frame, gl->rgba));
    }
    gl_teardown(gl);
    return NULL;
}

/* Caller: the render thread's status, with its message raised on this thread. */
static defo_status take_result(rn_gl *gl) {
    defo_status s = gl->status;
    return s < 0 ? defo_error(s, "%s", gl->message) : s;
}

defo_status rn_gl_create(rn_gl **out, char *name, size_t name_size) {
    *out = NULL;
    rn_gl *gl = defo_calloc(1, sizeof *gl);
    if (!gl) return defo_error_oom("OpenGL renderer", sizeof *gl);
    gl->dpy = EGL_NO_DISPLAY;
    gl->ctx = EGL_NO_CONTEXT;
    if (pthread_mutex_init(&gl->lock, NULL) != 0) {
        defo_free(gl);
        return defo_error(DEFO_ERR_OUT_OF_MEMORY, "OpenGL renderer: cannot create a mutex");
    }
    if (pthread_cond_init(&gl->cond, NULL) != 0) {
        pthread_mutex_destroy(&gl->lock);
        defo_free(gl);
        return defo_error(DEFO_ERR_OUT_OF_MEMORY,
                          "OpenGL renderer: cannot create a condition variable");
    }
    /* Signals go to the application's threads, never to the renderer's (nor
     * to the driver threads it starts, which inherit its mask). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&gl->thread, NULL, render_thread, gl);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        pthread_cond_destroy(&gl->cond);
        pthread_mutex_destroy(&gl->lock);
        defo_free(gl);
        return defo_error(DEFO_ERR_OUT_OF_MEMORY, "OpenGL renderer: cannot start its thread (%s)",
                          strerror(err));
    }
    pthread_mutex_lock(&gl->lock);
    while (!gl->ready) pthread_cond_wait(&gl->cond, &gl->lock);
    pthread_mutex_unlock(&gl->lock);
    if (gl->status < 0) {
        pthread_join(gl->thread, NULL);
        defo_status s = take_result(gl);
        pthread_cond_destroy(&gl->cond);
        pthread_mutex_destroy(&gl->lock);
        defo_free(gl);
        return s;
    }
    snprintf(name, name_size, "%s", gl->name);
    *out = gl;
    return DEFO_OK;
}

void rn_gl_destroy(rn_gl *gl) {
    if (!gl) return;
    pthread_mutex_lock(&gl->lock);
    gl->job = GL_JOB_QUIT;
    pthread_cond_broadcast(&gl->cond);
    pthread_mutex_unlock(&gl->lock);
    pthread_join(gl->thread, NULL);
    pthread_cond_destroy(&gl->cond);
    pthread_mutex_destroy(&gl->lock);
    defo_free(gl);
}

defo_status rn_gl_draw(rn_gl *gl, const rn_frame *f, unsigned char *rgba) {
    pthread_mutex_lock(&gl->lock);
    gl->frame = f;
    gl->rgba = rgba;
    gl->job = GL_JOB_DRAW;
    pthread_cond_broadcast(&gl->cond);
    while (gl->job != GL_JOB_NONE) pthread_cond_wait(&gl->cond, &gl->lock);
    defo_status s = take_result(gl);
    pthread_mutex_unlock(&gl->lock);
    return s;
}

#else /* no OpenGL at build time */

defo_status rn_gl_create(rn_gl **out, char *name, size_t name_size) {
    (void)name;
    (void)name_size;
    *out = NULL;
    return defo_error(DEFO_ERR_UNSUPPORTED,
                      "OpenGL rendering unavailable: defo was built without EGL/OpenGL ES");
}
void rn_gl_destroy(rn_gl *gl) {
    (void)gl;
}
defo_status rn_gl_draw(rn_gl *gl, const rn_frame *f, unsigned char *rgba) {
    (void)gl;
    (void)f;
    (void)rgba;
    return defo_error(DEFO_ERR_UNSUPPORTED, "OpenGL rendering unavailable");
}

#endif
