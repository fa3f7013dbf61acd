//! The user's own samples for `cargo xtask attack --samples-dir DIR`: one JSON file per sample,
//! naming its images beside it, and the reconstructions written back as images.
//!
//! `DIR/<name>.json`:
//!
//! ```json
//! {"rgb": "<name>.png", "depth": "<name>_depth.png", "vector": [0.1, -0.2], "action": 2, "signal": 1.5}
//! ```
//!
//! `rgb` (PNG or JPEG, any colour type, read as 8- or 16-bit RGB) and `depth` (a grayscale
//! PNG, 16-bit for full precision) are file names relative to `DIR` and optional; `vector`
//! defaults to empty. Images are square, one size per part across all samples, and every
//! sample has the same parts.
//!
//! A plain folder of images (`*.png`, `*.jpg`, `*.jpeg`, no `*.json` at all) is read too, as a
//! folder of photographs would be: each image is a colour sample, centre-cropped to a square
//! and resized to `--res` pixels, with its action and signal drawn from the run's seed
//! ([`DrawnLabel`], written to the run's `config.json`).

use std::path::{Path, PathBuf};

use image::{DynamicImage, ImageBuffer, Luma, Rgb};
use privrl_attacks::Sample;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Why a samples directory could not be read. Each names the file at fault.
#[derive(Debug, Error)]
pub enum SamplesDirError {
    /// The directory or a file in it could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// No `*.json` sample description and no image in the directory.
    #[error(
        "{0}: no sample description (*.json) and no image (*.png, *.jpg, *.jpeg) in the directory"
    )]
    Empty(PathBuf),
    /// A sample description that does not parse.
    #[error("{file}: {source}")]
    Json {
        /// The description.
        file: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A description names an image that is not there.
    #[error("{file}: its {part} image {image} does not exist")]
    MissingImage {
        /// The description.
        file: PathBuf,
        /// `rgb` or `depth`.
        part: &'static str,
        /// The missing image.
        image: PathBuf,
    },
    /// An image that does not decode.
    #[error("{image}: cannot decode: {source}")]
    Decode {
        /// The image.
        image: PathBuf,
        /// The decoder's error.
        source: image::ImageError,
    },
    /// An image that is not square.
    #[error("{image}: {width} × {height} px; images must be square")]
    NotSquare {
        /// The image.
        image: PathBuf,
        /// Width.
        width: u32,
        /// Height.
        height: u32,
    },
    /// A depth image with colour channels.
    #[error(
        "{image}: a depth image must be a grayscale PNG (16-bit for full precision), got {color:?}"
    )]
    DepthNotGray {
        /// The image.
        image: PathBuf,
        /// Its colour type.
        color: image::ColorType,
    },
    /// Two samples that differ in a part's presence or size.
    #[error(
        "{file}: {what} is {got}, but {first} has {expected}; every sample needs the same parts"
    )]
    Inconsistent {
        /// The description at fault.
        file: PathBuf,
        /// What differs.
        what: &'static str,
        /// Its value here.
        got: String,
        /// The first sample's description.
        first: PathBuf,
        /// Its value there.
        expected: String,
    },
    /// A value out of range.
    #[error("{file}: {message}")]
    Invalid {
        /// The description.
        file: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// One sample's description.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SampleFile {
    /// The colour image, relative to the directory.
    #[serde(default)]
    pub rgb: Option<String>,
    /// The depth image (grayscale PNG), relative to the directory.
    #[serde(default)]
    pub depth: Option<String>,
    /// The vector state.
    #[serde(default)]
    pub vector: Vec<f32>,
    /// The action taken.
    pub action: usize,
    /// The supervision signal: the target Q-value (DQN) or the return (REINFORCE).
    pub signal: f64,
}

/// The samples of a directory with their names (the descriptions' file stems), in name order.
#[derive(Debug, Clone)]
pub struct UserSamples {
    /// Sample names.
    pub names: Vec<String>,
    /// The samples.
    pub samples: Vec<Sample>,
    /// Side of the colour images in pixels, if the samples have them.
    pub rgb_size: Option<usize>,
    /// Side of the depth images in pixels, if the samples have them.
    pub depth_size: Option<usize>,
    /// Length of the vector state.
    pub vector_len: usize,
    /// A plain folder of images: the action and signal drawn for each sample; empty for
    /// described samples.
    pub drawn: Vec<DrawnLabel>,
}

/// What was drawn from the seed for one image of a plain folder: the labels a description
/// would have given. The run records them in its `config.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrawnLabel {
    /// The image's file name.
    pub image: String,
    /// The action, uniform over the `--actions` actions.
    pub action: usize,
    /// The supervision signal, uniform in [`DRAWN_SIGNAL`]: away from 0, where REINFORCE's
    /// gradient (R ∇ log π) would vanish and DQN's error would be tiny.
    pub signal: f64,
}

/// The range the signals of a plain folder are drawn from.
pub const DRAWN_SIGNAL: std::ops::Range<f64> = 0.5..1.5;

/// Mixed into the seed for the labels' generator, so that they are drawn apart from the
/// victim's initialisation and the attack's, which start from the seed itself.
const LABEL_STREAM: u64 = 0x6c61_6265_6c73; // "labels"

impl UserSamples {
    /// The samples with only the parts that `keep` selects (colour, depth, vector).
    pub fn keep_parts(mut self, rgb: bool, depth: bool, vector: bool) -> Self {
        for sample in &mut self.samples {
            if !rgb {
                sample.rgb = None;
            }
            if !depth {
                sample.depth = None;
            }
            if !vector {
                sample.vector.clear();
            }
        }
        self.rgb_size = self.rgb_size.filter(|_| rgb);
        self.depth_size = self.depth_size.filter(|_| depth);
        self.vector_len = if vector { self.vector_len } else { 0 };
        self
    }
}

/// Reads every `*.json` description of `dir` and the images it names; `actions` bounds the
/// actions. Without descriptions, reads `dir` as a plain folder of images
/// ([`read_plain_images`]: `size` pixels, labels drawn from `seed`).
pub fn read_samples_dir(
    dir: &Path,
    actions: usize,
    seed: u64,
    size: usize,
) -> Result<UserSamples, SamplesDirError> {
    let files = files_with(dir, &["json"])?;
    if files.is_empty() {
        let images = files_with(dir, &["png", "jpg", "jpeg"])?;
        if images.is_empty() {
            return Err(SamplesDirError::Empty(dir.to_path_buf()));
        }
        return read_plain_images(&images, actions, seed, size);
    }
    let mut out = UserSamples {
        names: Vec::new(),
        samples: Vec::new(),
        rgb_size: None,
        depth_size: None,
        vector_len: 0,
        drawn: Vec::new(),
    };
    for (index, file) in files.iter().enumerate() {
        let (sample, sizes) = read_sample(dir, file, actions)?;
        if index == 0 {
            (out.rgb_size, out.depth_size, out.vector_len) = sizes;
        } else {
            check_same_parts(file, &files[0], sizes, &out)?;
        }
        out.names.push(
            file.file_stem()
                .map_or_else(|| format!("sample{index}"), |s| s.to_string_lossy().into()),
        );
        out.samples.push(sample);
    }
    Ok(out)
}

/// The error of an I/O operation on `path`.
fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> SamplesDirError {
    let path = path.to_path_buf();
    move |source| SamplesDirError::Io { path, source }
}

/// The files of `dir` whose extension is one of `extensions` (any case), sorted.
fn files_with(dir: &Path, extensions: &[&str]) -> Result<Vec<PathBuf>, SamplesDirError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io_error(dir))?
        .map(|entry| entry.map(|e| e.path()).map_err(io_error(dir)))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|p| {
            p.is_file()
                && p.extension().is_some_and(|e| {
                    extensions
                        .iter()
                        .any(|x| e.to_string_lossy().eq_ignore_ascii_case(x))
                })
        })
        .collect();
    files.sort();
    Ok(files)
}

/// A plain folder's `images` as colour samples of `size` × `size` pixels (each centre-cropped
/// to a square, then resized), named by file stem, with an action uniform over `actions` and a
/// signal uniform in [`DRAWN_SIGNAL`] drawn for each, in file-name order, from `seed`.
pub fn read_plain_images(
    images: &[PathBuf],
    actions: usize,
    seed: u64,
    size: usize,
) -> Result<UserSamples, SamplesDirError> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ LABEL_STREAM);
    let mut out = UserSamples {
        names: Vec::new(),
        samples: Vec::new(),
        rgb_size: Some(size),
        depth_size: None,
        vector_len: 0,
        drawn: Vec::new(),
    };
    for path in images {
        let image = open(path)?;
        let (width, height) = (image.width(), image.height());
        if width == 0 || height == 0 {
            return Err(SamplesDirError::NotSquare {
                image: path.clone(),
                width,
                height,
            });
        }
        let side = width.min(height);
        let square = image.crop_imm((width - side) / 2, (height - side) / 2, side, side);
        let pixels = square
            .resize_exact(
                size as u32,
                size as u32,
                image::imageops::FilterType::Triangle,
            )
            .to_rgb32f();
        let mut rgb = vec![0.0; 3 * size * size];
        for (i, pixel) in pixels.pixels().enumerate() {
            for c in 0..3 {
                rgb[c * size * size + i] = pixel.0[c];
            }
        }
        let label = DrawnLabel {
            image: path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into()),
            action: rng.random_range(0..actions),
            signal: rng.random_range(DRAWN_SIGNAL),
        };
        out.names.push(
            path.file_stem()
                .map_or_else(|| label.image.clone(), |s| s.to_string_lossy().into()),
        );
        out.samples.push(Sample {
            rgb: Some(rgb),
            depth: None,
            vector: Vec::new(),
            action: label.action,
            signal: label.signal,
        });
        out.drawn.push(label);
    }
    Ok(out)
}

/// The sizes of a sample's parts: RGB and depth image sizes (`None`: absent) and the
/// vector's length.
type PartSizes = (Option<usize>, Option<usize>, usize);

/// Reads and checks one description `file` of `dir` and the images it names.
fn read_sample(
    dir: &Path,
    file: &Path,
    actions: usize,
) -> Result<(Sample, PartSizes), SamplesDirError> {
    let text = std::fs::read_to_string(file).map_err(io_error(file))?;
    let description: SampleFile =
        serde_json::from_str(&text).map_err(|source| SamplesDirError::Json {
            file: file.to_path_buf(),
            source,
        })?;
    let invalid = |message: String| SamplesDirError::Invalid {
        file: file.to_path_buf(),
        message,
    };
    if description.action >= actions {
        return Err(invalid(format!(
            "action {} is outside the {actions} actions (--actions)",
            description.action
        )));
    }
    if !description.signal.is_finite() {
        return Err(invalid("the signal is not finite".into()));
    }
    if description.vector.iter().any(|v| !v.is_finite()) {
        return Err(invalid("the vector has a non-finite value".into()));
    }
    let image_path = |part: &'static str, name: &Option<String>| {
        name.as_ref()
            .map(|name| {
                let image = dir.join(name);
                match image.is_file() {
                    true => Ok(image),
                    false => Err(SamplesDirError::MissingImage {
                        file: file.to_path_buf(),
                        part,
                        image,
                    }),
                }
            })
            .transpose()
    };
    let rgb = image_path("rgb", &description.rgb)?
        .map(|p| read_rgb(&p))
        .transpose()?;
    let depth = image_path("depth", &description.depth)?
        .map(|p| read_depth(&p))
        .transpose()?;
    let sizes = (
        rgb.as_ref().map(|(_, s)| *s),
        depth.as_ref().map(|(_, s)| *s),
        description.vector.len(),
    );
    let sample = Sample {
        rgb: rgb.map(|(v, _)| v),
        depth: depth.map(|(v, _)| v),
        vector: description.vector,
        action: description.action,
        signal: description.signal,
    };
    Ok((sample, sizes))
}

/// Fails unless `file`'s part sizes are those of the first file's, already in `out`.
fn check_same_parts(
    file: &Path,
    first: &Path,
    sizes: PartSizes,
    out: &UserSamples,
) -> Result<(), SamplesDirError> {
    let show = |s: Option<usize>| s.map_or("absent".into(), |s| format!("{s} px"));
    let differ = |what, got: String, expected: String| SamplesDirError::Inconsistent {
        file: file.to_path_buf(),
        what,
        got,
        first: first.to_path_buf(),
        expected,
    };
    if sizes.0 != out.rgb_size {
        return Err(differ("the rgb image", show(sizes.0), show(out.rgb_size)));
    }
    if sizes.1 != out.depth_size {
        return Err(differ(
            "the depth image",
            show(sizes.1),
            show(out.depth_size),
        ));
    }
    if sizes.2 != out.vector_len {
        return Err(differ(
            "the vector's length",
            sizes.2.to_string(),
            out.vector_len.to_string(),
        ));
    }
    Ok(())
}

fn open(path: &Path) -> Result<DynamicImage, SamplesDirError> {
    image::io::Reader::open(path)
        .map_err(|source| SamplesDirError::Io {
            path: path.to_path_buf(),
            source,
        })?
        .with_guessed_format()
        .map_err(|source| SamplesDirError::Io {
            path: path.to_path_buf(),
            source,
        })?
        .decode()
        .map_err(|source| SamplesDirError::Decode {
            image: path.to_path_buf(),
            source,
        })
}

fn square(path: &Path, image: &DynamicImage) -> Result<usize, SamplesDirError> {
    let (width, height) = (image.width(), image.height());
    if width != height || width == 0 {
        return Err(SamplesDirError::NotSquare {
            image: path.to_path_buf(),
            width,
            height,
        });
    }
    Ok(width as usize)
}

/// A colour image as `3 × s × s` channel-major values in `[0, 1]`, and its side.
fn read_rgb(path: &Path) -> Result<(Vec<f32>, usize), SamplesDirError> {
    let image = open(path)?;
    let size = square(path, &image)?;
    let pixels = image.to_rgb32f();
    let mut values = vec![0.0; 3 * size * size];
    for (i, pixel) in pixels.pixels().enumerate() {
        for c in 0..3 {
            values[c * size * size + i] = pixel.0[c];
        }
    }
    Ok((values, size))
}

/// A grayscale image as `s × s` values in `[0, 1]` (16-bit: v / 65535), and its side.
fn read_depth(path: &Path) -> Result<(Vec<f32>, usize), SamplesDirError> {
    let image = open(path)?;
    let color = image.color();
    if !matches!(color, image::ColorType::L8 | image::ColorType::L16) {
        return Err(SamplesDirError::DepthNotGray {
            image: path.to_path_buf(),
            color,
        });
    }
    let size = square(path, &image)?;
    let values = image
        .to_luma16()
        .pixels()
        .map(|p| f32::from(p.0[0]) / 65535.0)
        .collect();
    Ok((values, size))
}

/// Writes a `3 × s × s` image in `[0, 1]` as an 8-bit RGB PNG.
pub fn write_rgb_png(path: &Path, values: &[f32], size: usize) -> anyhow::Result<()> {
    let plane = size * size;
    let image = ImageBuffer::<Rgb<u8>, Vec<u8>>::from_fn(size as u32, size as u32, |x, y| {
        let i = y as usize * size + x as usize;
        Rgb(std::array::from_fn(|c| to_u8(values[c * plane + i])))
    });
    image.save(path)?;
    Ok(())
}

/// Writes an `s × s` image in `[0, 1]` as a 16-bit grayscale PNG.
pub fn write_depth_png(path: &Path, values: &[f32], size: usize) -> anyhow::Result<()> {
    let image = ImageBuffer::<Luma<u16>, Vec<u16>>::from_fn(size as u32, size as u32, |x, y| {
        let v = values[y as usize * size + x as usize];
        Luma([(v.clamp(0.0, 1.0) * 65535.0).round() as u16])
    });
    image.save(path)?;
    Ok(())
}

fn to_u8(v: f32) -> u8 {
    (v.clamp(0.0, 1.0) * 255.0).round() as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> crate::run::tests::TestDir {
        crate::run::tests::temp_dir(name)
    }

    #[test]
    fn images_and_descriptions_round_trip_and_bad_input_is_named() {
        let d = dir("samples-dir-read");
        let depth: Vec<f32> = (0..16).map(|i| i as f32 / 15.0).collect();
        let rgb: Vec<f32> = (0..48).map(|i| (i % 5) as f32 / 4.0).collect();
        write_depth_png(&d.join("a_depth.png"), &depth, 4).unwrap();
        write_rgb_png(&d.join("a.png"), &rgb, 4).unwrap();
        let a = r#"{"rgb": "a.png", "depth": "a_depth.png", "vector": [0.5, -1], "action": 2, "signal": 1.5}"#;
        std::fs::write(d.join("a.json"), a).unwrap();
        let read = read_samples_dir(&d, 3, 0, 4).unwrap();
        assert_eq!(read.names, ["a"]);
        assert_eq!(
            (read.rgb_size, read.depth_size, read.vector_len),
            (Some(4), Some(4), 2)
        );
        let s = &read.samples[0];
        // 16-bit depth keeps 1/65535 steps; 8-bit colour 1/255.
        for (got, want) in s.depth.as_ref().unwrap().iter().zip(&depth) {
            assert!((got - want).abs() <= 0.5 / 65535.0 + 1e-7, "{got} {want}");
        }
        for (got, want) in s.rgb.as_ref().unwrap().iter().zip(&rgb) {
            assert!((got - want).abs() <= 0.5 / 255.0 + 1e-6, "{got} {want}");
        }
        assert_eq!(
            (s.action, s.signal, s.vector.clone()),
            (2, 1.5, vec![0.5, -1.0])
        );

        let error = |json: &str| {
            std::fs::write(d.join("b.json"), json).unwrap();
            read_samples_dir(&d, 3, 0, 4).unwrap_err().to_string()
        };
        let e = error(r#"{"depth": "missing.png", "vector": [0, 0], "action": 0, "signal": 1}"#);
        assert!(
            e.contains("missing.png") && e.contains("does not exist"),
            "{e}"
        );
        let e = error(
            r#"{"rgb": "a.png", "depth": "a.png", "vector": [0, 0], "action": 0, "signal": 1}"#,
        );
        assert!(e.contains("grayscale"), "{e}");
        let e = error(
            r#"{"rgb": "a.png", "depth": "a_depth.png", "vector": [0], "action": 0, "signal": 1}"#,
        );
        assert!(
            e.contains("vector's length is 1") && e.contains("a.json"),
            "{e}"
        );
        let e = error(
            r#"{"rgb": "a.png", "depth": "a_depth.png", "vector": [0, 0], "action": 3, "signal": 1}"#,
        );
        assert!(e.contains("action 3 is outside the 3 actions"), "{e}");
        let e = error(r#"{"vector": [0, 0], "action": 0}"#);
        assert!(e.contains("b.json") && e.contains("signal"), "{e}");
        write_depth_png(&d.join("small.png"), &depth[..4], 2).unwrap();
        let e = error(
            r#"{"rgb": "a.png", "depth": "small.png", "vector": [0, 0], "action": 0, "signal": 1}"#,
        );
        assert!(
            e.contains("depth image is 2 px") && e.contains("4 px"),
            "{e}"
        );
        std::fs::write(d.join("wide.png"), b"not a png").unwrap();
        let e = error(
            r#"{"rgb": "wide.png", "depth": "a_depth.png", "vector": [0, 0], "action": 0, "signal": 1}"#,
        );
        assert!(e.contains("cannot decode"), "{e}");
        let empty = dir("samples-dir-empty");
        let e = read_samples_dir(&empty, 3, 0, 4).unwrap_err().to_string();
        assert!(
            e.contains("no sample description") && e.contains("no image"),
            "{e}"
        );
    }

    /// A plain folder of images, as photographs come: no descriptions, not square. Each image
    /// is centre-cropped and resized to the requested size; actions and signals are drawn
    /// from the seed, the same for the same seed and within their ranges.
    #[test]
    fn a_plain_folder_of_images_gets_labels_drawn_from_the_seed() {
        let d = dir("samples-dir-plain");
        // 6 × 4: a red 1-pixel border left and right around a 4 × 4 centre, black above a
        // white lower half; the crop keeps the centre, so no red survives.
        let photo = ImageBuffer::from_fn(6, 4, |x, y| match (x, y) {
            (0 | 5, _) => Rgb([255u8, 0, 0]),
            (_, 0 | 1) => Rgb([0, 0, 0]),
            _ => Rgb([255, 255, 255]),
        });
        photo.save(d.join("b_photo.png")).unwrap();
        write_rgb_png(&d.join("a.png"), &[0.5; 3 * 16], 4).unwrap();
        std::fs::write(d.join("notes.txt"), "not an image").unwrap();

        let read = read_samples_dir(&d, 5, 11, 4).unwrap();
        assert_eq!(read.names, ["a", "b_photo"]);
        assert_eq!(
            (read.rgb_size, read.depth_size, read.vector_len),
            (Some(4), None, 0)
        );
        let images: Vec<&str> = read.drawn.iter().map(|l| l.image.as_str()).collect();
        assert_eq!(images, ["a.png", "b_photo.png"]);
        for (sample, label) in read.samples.iter().zip(&read.drawn) {
            assert!(sample.action < 5 && DRAWN_SIGNAL.contains(&sample.signal));
            assert_eq!((sample.action, sample.signal), (label.action, label.signal));
        }
        // The crop: red channel equals green everywhere (no border), top rows dark, bottom light.
        let rgb = read.samples[1].rgb.as_ref().unwrap();
        let (red, green) = (&rgb[..16], &rgb[16..32]);
        assert_eq!(red, green);
        assert!(red[..4].iter().all(|&v| v < 0.5) && red[12..].iter().all(|&v| v > 0.5));

        let again = read_samples_dir(&d, 5, 11, 4).unwrap();
        assert_eq!(again.drawn, read.drawn);
        let other = read_samples_dir(&d, 5, 12, 4).unwrap();
        assert_ne!(other.drawn, read.drawn);
    }
}
