//! libheif, loaded the first time a HEIF or AVIF file is read rather than when the process
//! starts. A linked libheif sets up its decoders (libde265's tables among them) in every process
//! at start, some 4 ms, whether it reads a HEIF file or not: most runs read none. The types and
//! signatures are libheif-sys's (built against the same libheif); its functions are looked up
//! here, so the executable does not need the library until then.

use std::ffi::{CStr, c_int, c_void};
use std::ptr;
use std::sync::OnceLock;

use libheif_sys as lh;

/// The shared object of libheif 1.x (Debian's `libheif1`).
const SONAME: &CStr = c"libheif.so.1";

/// libheif's entry points the decoder uses.
struct Api {
    context_alloc: unsafe extern "C" fn() -> *mut lh::heif_context,
    context_free: unsafe extern "C" fn(*mut lh::heif_context),
    read_from_memory_without_copy: unsafe extern "C" fn(
        *mut lh::heif_context,
        *const c_void,
        usize,
        *const lh::heif_reading_options,
    ) -> lh::heif_error,
    primary_image_handle: unsafe extern "C" fn(
        *mut lh::heif_context,
        *mut *mut lh::heif_image_handle,
    ) -> lh::heif_error,
    handle_release: unsafe extern "C" fn(*const lh::heif_image_handle),
    handle_width: unsafe extern "C" fn(*const lh::heif_image_handle) -> c_int,
    handle_height: unsafe extern "C" fn(*const lh::heif_image_handle) -> c_int,
    handle_has_alpha: unsafe extern "C" fn(*const lh::heif_image_handle) -> c_int,
    raw_profile_size: unsafe extern "C" fn(*const lh::heif_image_handle) -> usize,
    raw_profile: unsafe extern "C" fn(*const lh::heif_image_handle, *mut c_void) -> lh::heif_error,
    nclx_profile: unsafe extern "C" fn(
        *const lh::heif_image_handle,
        *mut *mut lh::heif_color_profile_nclx,
    ) -> lh::heif_error,
    nclx_free: unsafe extern "C" fn(*mut lh::heif_color_profile_nclx),
    decode_image: unsafe extern "C" fn(
        *const lh::heif_image_handle,
        *mut *mut lh::heif_image,
        lh::heif_colorspace,
        lh::heif_chroma,
        *const lh::heif_decoding_options,
    ) -> lh::heif_error,
    image_release: unsafe extern "C" fn(*const lh::heif_image),
    image_width: unsafe extern "C" fn(*const lh::heif_image, lh::heif_channel) -> c_int,
    image_height: unsafe extern "C" fn(*const lh::heif_image, lh::heif_channel) -> c_int,
    image_bits_per_pixel: unsafe extern "C" fn(*const lh::heif_image, lh::heif_channel) -> c_int,
    plane_readonly:
        unsafe extern "C" fn(*const lh::heif_image, lh::heif_channel, *mut c_int) -> *const u8,
}

/// libheif, loaded once; an error says why it cannot be.
fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Api, String> {
    // SAFETY: dlopen and dlerror with a valid C string; the handle is never closed, so the
    // functions looked up stay valid for the life of the process.
    let library = unsafe { libc::dlopen(SONAME.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if library.is_null() {
        return Err(format!(
            "HEIF and AVIF need libheif ({}), which cannot be loaded: {}",
            SONAME.to_string_lossy(),
            last_dl_error()
        ));
    }
    macro_rules! symbol {
        ($name:literal) => {{
            // SAFETY: the symbol's C signature is the one libheif-sys gives for it, and the
            // field it is stored in has that type.
            unsafe {
                let found = libc::dlsym(library, concat!($name, "\0").as_ptr().cast());
                if found.is_null() {
                    return Err(format!("libheif has no {}: {}", $name, last_dl_error()));
                }
                as_function(found)
            }
        }};
    }
    let init: unsafe extern "C" fn(*mut lh::heif_init_params) -> lh::heif_error =
        symbol!("heif_init");
    // Registers the decoders, counted: with no heif_deinit to match, they stay for the life of
    // the process, whatever else in it initializes and deinitializes libheif.
    // SAFETY: no parameters (null is allowed).
    check(unsafe { init(ptr::null_mut()) })?;
    Ok(Api {
        context_alloc: symbol!("heif_context_alloc"),
        context_free: symbol!("heif_context_free"),
        read_from_memory_without_copy: symbol!("heif_context_read_from_memory_without_copy"),
        primary_image_handle: symbol!("heif_context_get_primary_image_handle"),
        handle_release: symbol!("heif_image_handle_release"),
        handle_width: symbol!("heif_image_handle_get_width"),
        handle_height: symbol!("heif_image_handle_get_height"),
        handle_has_alpha: symbol!("heif_image_handle_has_alpha_channel"),
        raw_profile_size: symbol!("heif_image_handle_get_raw_color_profile_size"),
        raw_profile: symbol!("heif_image_handle_get_raw_color_profile"),
        nclx_profile: symbol!("heif_image_handle_get_nclx_color_profile"),
        nclx_free: symbol!("heif_nclx_color_profile_free"),
        decode_image: symbol!("heif_decode_image"),
        image_release: symbol!("heif_image_release"),
        image_width: symbol!("heif_image_get_width"),
        image_height: symbol!("heif_image_get_height"),
        image_bits_per_pixel: symbol!("heif_image_get_bits_per_pixel"),
        plane_readonly: symbol!("heif_image_get_plane_readonly"),
    })
}

/// The function pointer `F` at `address`.
///
/// # Safety
/// `F` is an `extern "C"` function pointer type whose signature is the function's at `address`.
unsafe fn as_function<F: Copy>(address: *mut c_void) -> F {
    assert_eq!(size_of::<F>(), size_of::<*mut c_void>());
    // SAFETY: a function pointer has the size of a data pointer on the platforms libheif runs on
    // (checked above), and the caller vouches for the signature.
    unsafe { std::mem::transmute_copy(&address) }
}

fn last_dl_error() -> String {
    // SAFETY: dlerror returns null or a C string valid until the next dl call on this thread.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        "no reason given".to_string()
    } else {
        // SAFETY: not null, so a C string (above).
        unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    }
}

/// libheif's error as text, or `Ok` for none.
fn check(error: lh::heif_error) -> Result<(), String> {
    if error.code == lh::heif_error_code_heif_error_Ok {
        return Ok(());
    }
    if error.message.is_null() {
        return Err(format!("libheif error {}.{}", error.code, error.subcode));
    }
    // SAFETY: libheif's messages are static C strings.
    Err(unsafe { CStr::from_ptr(error.message) }
        .to_string_lossy()
        .into_owned())
}

/// A file read by libheif. It reads `bytes` in place, so it borrows them.
pub(crate) struct Context<'a> {
    api: &'static Api,
    inner: *mut lh::heif_context,
    _bytes: std::marker::PhantomData<&'a [u8]>,
}

impl<'a> Context<'a> {
    pub(crate) fn read(bytes: &'a [u8]) -> Result<Context<'a>, String> {
        let api = api()?;
        // SAFETY: a fresh context, freed on drop.
        let inner = unsafe { (api.context_alloc)() };
        if inner.is_null() {
            return Err("libheif could not allocate a context".to_string());
        }
        let context = Context {
            api,
            inner,
            _bytes: std::marker::PhantomData,
        };
        // SAFETY: `bytes` outlives the context (its lifetime), which reads them in place.
        check(unsafe {
            (api.read_from_memory_without_copy)(
                inner,
                bytes.as_ptr().cast(),
                bytes.len(),
                ptr::null(),
            )
        })?;
        Ok(context)
    }

    pub(crate) fn primary_image(&self) -> Result<Handle<'_>, String> {
        let mut inner = ptr::null_mut();
        // SAFETY: a live context; the handle is released on drop.
        check(unsafe { (self.api.primary_image_handle)(self.inner, &mut inner) })?;
        if inner.is_null() {
            return Err("libheif gave no primary image".to_string());
        }
        Ok(Handle {
            api: self.api,
            inner,
            _context: std::marker::PhantomData,
        })
    }
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated by context_alloc, freed once.
        unsafe { (self.api.context_free)(self.inner) }
    }
}

/// An image of a file, before decoding.
pub(crate) struct Handle<'c> {
    api: &'static Api,
    inner: *mut lh::heif_image_handle,
    _context: std::marker::PhantomData<&'c ()>,
}

/// A colour profile as a HEIF file declares it.
pub(crate) enum Profile {
    Icc(Vec<u8>),
    /// Colour primaries and transfer characteristics (ITU-T H.273 code points).
    Nclx {
        primaries: u8,
        transfer: u8,
    },
}

impl Handle<'_> {
    /// Width and height with the file's rotation applied.
    pub(crate) fn size(&self) -> (u32, u32) {
        // SAFETY: a live handle.
        let (w, h) = unsafe {
            (
                (self.api.handle_width)(self.inner),
                (self.api.handle_height)(self.inner),
            )
        };
        (w.max(0) as u32, h.max(0) as u32)
    }

    pub(crate) fn has_alpha(&self) -> bool {
        // SAFETY: a live handle.
        unsafe { (self.api.handle_has_alpha)(self.inner) != 0 }
    }

    /// The ICC profile if there is a non-empty one, else the nclx one if any.
    pub(crate) fn profile(&self) -> Option<Profile> {
        // SAFETY: a live handle; the buffer holds the size libheif gives.
        let size = unsafe { (self.api.raw_profile_size)(self.inner) };
        if size > 0 {
            let mut icc = vec![0u8; size];
            if check(unsafe { (self.api.raw_profile)(self.inner, icc.as_mut_ptr().cast()) }).is_ok()
            {
                return Some(Profile::Icc(icc));
            }
        }
        let mut nclx = ptr::null_mut();
        // SAFETY: a live handle; the profile is freed here.
        let found = check(unsafe { (self.api.nclx_profile)(self.inner, &mut nclx) });
        if found.is_err() || nclx.is_null() {
            return None;
        }
        // SAFETY: not null, so a profile libheif allocated.
        let (primaries, transfer) =
            unsafe { ((*nclx).color_primaries, (*nclx).transfer_characteristics) };
        unsafe { (self.api.nclx_free)(nclx) };
        Some(Profile::Nclx {
            primaries: primaries as u8,
            transfer: transfer as u8,
        })
    }

    /// The image decoded to 8-bit interleaved RGB, or RGBA with `alpha`, turned as the file says:
    /// width, height and the rows packed (`width * channels` bytes each).
    pub(crate) fn decode_rgb(&self, alpha: bool) -> Result<(u32, u32, Vec<u8>), String> {
        let chroma = if alpha {
            lh::heif_chroma_heif_chroma_interleaved_RGBA
        } else {
            lh::heif_chroma_heif_chroma_interleaved_RGB
        };
        let mut image = ptr::null_mut();
        // SAFETY: a live handle; the image is released below.
        check(unsafe {
            (self.api.decode_image)(
                self.inner,
                &mut image,
                lh::heif_colorspace_heif_colorspace_RGB,
                chroma,
                ptr::null(),
            )
        })?;
        if image.is_null() {
            return Err("libheif decoded no image".to_string());
        }
        let copied = self.copy_interleaved(image, if alpha { 4 } else { 3 });
        // SAFETY: decoded above, released once.
        unsafe { (self.api.image_release)(image) };
        copied
    }

    fn copy_interleaved(
        &self,
        image: *const lh::heif_image,
        channels: usize,
    ) -> Result<(u32, u32, Vec<u8>), String> {
        let channel = lh::heif_channel_heif_channel_interleaved;
        let mut stride: c_int = 0;
        // SAFETY: a live image; the plane is `height` rows of `stride` bytes, read before the
        // image is released.
        let (w, h, bits, data) = unsafe {
            (
                (self.api.image_width)(image, channel),
                (self.api.image_height)(image, channel),
                (self.api.image_bits_per_pixel)(image, channel),
                (self.api.plane_readonly)(image, channel, &mut stride),
            )
        };
        if data.is_null() {
            return Err("libheif gave no interleaved pixels".to_string());
        }
        if bits != 8 * channels as c_int {
            return Err(format!(
                "libheif gave {bits} bits a pixel, not {}",
                8 * channels
            ));
        }
        let (w, h, stride) = (w.max(0) as usize, h.max(0) as usize, stride.max(0) as usize);
        let row = w * channels;
        if stride < row {
            return Err("libheif's pixels do not fill the image".to_string());
        }
        let mut pixels = Vec::with_capacity(row * h);
        for y in 0..h {
            // SAFETY: row `y` of the plane, within its `h * stride` bytes.
            pixels.extend_from_slice(unsafe {
                std::slice::from_raw_parts(data.add(y * stride), row)
            });
        }
        Ok((w as u32, h as u32, pixels))
    }
}

impl Drop for Handle<'_> {
    fn drop(&mut self) {
        // SAFETY: obtained from the context, released once.
        unsafe { (self.api.handle_release)(self.inner) }
    }
}
