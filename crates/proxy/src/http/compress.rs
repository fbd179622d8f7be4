//! Response compression as a streaming body: each upstream data frame goes
//! through the encoder and what the encoder made of it goes to the client.
//! Nothing is buffered whole. When the upstream has nothing more for now
//! (its body is pending) and the encoder holds input it has not emitted,
//! the encoder is flushed (a sync flush), so a slow stream (server-sent
//! events, a long poll) reaches the client as it is written. Trailers pass
//! through after the encoder's last bytes.
//!
//! Per stream, an encoder holds about (measured): gzip 340 KiB at every
//! level; brotli (window 2^18) 0.2 MiB at quality 1, 1.3 MiB at 4, 1.9 MiB
//! at 5, 2.9 MiB at 6; zstd (default window) 1.3 MiB at level 1, 2 MiB at
//! 2, 3.5 MiB at 3. See [`codec_level`] for why the scales stop there.

use std::io::{self, Write};
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http::{HeaderMap, HeaderValue};
use http_body::{Body, Frame};

/// A content coding the gateway can produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Brotli,
    Zstd,
    Gzip,
}

impl Encoding {
    /// The content-coding token (`Content-Encoding`, `Accept-Encoding`).
    pub fn token(self) -> &'static str {
        match self {
            Encoding::Brotli => "br",
            Encoding::Zstd => "zstd",
            Encoding::Gzip => "gzip",
        }
    }

    pub fn header_value(self) -> HeaderValue {
        HeaderValue::from_static(self.token())
    }
}

/// Brotli's window: 2^18 = 256 KiB of history (the format allows 16 MiB).
const BROTLI_LGWIN: u32 = 18;
/// Brotli's output buffer between the encoder and our `Vec`.
const BROTLI_BUFFER: usize = 4096;

/// Each encoder's own setting for a Compression `level` (1 fastest to 9
/// smallest). gzip takes it as it is. Brotli (0–11) and zstd (1–22) stop
/// at 6 and 3: on the fly, their higher settings cost far more CPU and
/// memory per stream (brotli quality 7 about 9 MiB, 9 about 33 MiB; zstd
/// 9 about 15 MiB) for a few percent of size. The default level 6 is
/// gzip 6, brotli 5 and zstd 2.
pub fn codec_level(encoding: Encoding, level: u8) -> u32 {
    let level = level.clamp(1, 9);
    match encoding {
        Encoding::Gzip => u32::from(level),
        Encoding::Brotli => match level {
            1..=4 => u32::from(level),
            5 => 4,
            6 | 7 => 5,
            _ => 6,
        },
        Encoding::Zstd => u32::from(level).div_ceil(3),
    }
}

enum Codec {
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    // Boxed: the brotli state is large, and a body moves.
    Brotli(Box<brotli::CompressorWriter<Vec<u8>>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

/// One response's encoder, writing into a buffer the body drains.
pub struct Encoder(Codec);

impl Encoder {
    /// Fails only when the encoder cannot get its memory (zstd).
    pub fn new(encoding: Encoding, level: u8) -> io::Result<Self> {
        let setting = codec_level(encoding, level);
        let codec = match encoding {
            Encoding::Gzip => Codec::Gzip(flate2::write::GzEncoder::new(
                Vec::new(),
                flate2::Compression::new(setting),
            )),
            Encoding::Brotli => Codec::Brotli(Box::new(brotli::CompressorWriter::new(
                Vec::new(),
                BROTLI_BUFFER,
                setting,
                BROTLI_LGWIN,
            ))),
            Encoding::Zstd => Codec::Zstd(zstd::stream::write::Encoder::new(
                Vec::new(),
                i32::try_from(setting).unwrap_or(3),
            )?),
        };
        Ok(Encoder(codec))
    }

    fn writer(&mut self) -> &mut dyn Write {
        match &mut self.0 {
            Codec::Gzip(e) => e,
            Codec::Brotli(e) => &mut **e,
            Codec::Zstd(e) => e,
        }
    }

    pub fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.writer().write_all(data)
    }

    /// Emits everything written so far (a sync flush: the stream goes on).
    pub fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }

    /// What the encoder has produced since the last call, if anything.
    pub fn output(&mut self) -> Option<Bytes> {
        let buffer = match &mut self.0 {
            Codec::Gzip(e) => e.get_mut(),
            Codec::Brotli(e) => e.get_mut(),
            Codec::Zstd(e) => e.get_mut(),
        };
        (!buffer.is_empty()).then(|| Bytes::from(std::mem::take(buffer)))
    }

    /// Ends the stream; the rest of the output.
    pub fn finish(self) -> io::Result<Bytes> {
        let rest = match self.0 {
            Codec::Gzip(e) => e.finish()?,
            Codec::Brotli(e) => e.into_inner(),
            Codec::Zstd(e) => e.finish()?,
        };
        Ok(Bytes::from(rest))
    }
}

/// A body compressed on its way through.
pub struct CompressBody<B> {
    inner: B,
    /// `None` once the stream is finished (or could not go on).
    encoder: Option<Encoder>,
    /// The encoder took input since it last flushed.
    unflushed: bool,
    /// The upstream's trailers, sent after the encoder's last bytes.
    trailers: Option<HeaderMap>,
}

impl<B> CompressBody<B> {
    pub fn new(inner: B, encoder: Encoder) -> Self {
        CompressBody {
            inner,
            encoder: Some(encoder),
            unflushed: false,
            trailers: None,
        }
    }

    /// The encoder's last bytes, or (when there are none) the trailers.
    fn finish<E>(&mut self) -> Poll<Option<Result<Frame<Bytes>, E>>> {
        match self.encoder.take().map(Encoder::finish) {
            Some(Ok(rest)) if !rest.is_empty() => Poll::Ready(Some(Ok(Frame::data(rest)))),
            Some(Err(e)) => self.failed(e),
            _ => Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t)))),
        }
    }

    /// An encoder error (it writes to memory: in practice, none). The body
    /// ends where it is; the client's decoder sees the stream unfinished.
    fn failed<E>(&mut self, e: io::Error) -> Poll<Option<Result<Frame<Bytes>, E>>> {
        tracing::error!(error = %e, "response compression failed; body cut short");
        self.encoder = None;
        self.trailers = None;
        Poll::Ready(None)
    }
}

impl<B> Body for CompressBody<B>
where
    B: Body + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        loop {
            let Some(encoder) = this.encoder.as_mut() else {
                return Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))));
            };
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(mut data) => {
                        while data.has_remaining() {
                            let chunk = data.chunk();
                            let n = chunk.len();
                            if let Err(e) = encoder.write(chunk) {
                                return this.failed(e);
                            }
                            data.advance(n);
                            this.unflushed = true;
                        }
                        if let Some(out) = encoder.output() {
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                    }
                    // Trailers end the body: the stream is finished first.
                    Err(frame) => {
                        if let Ok(trailers) = frame.into_trailers() {
                            this.trailers = Some(trailers);
                            return this.finish();
                        }
                    }
                },
                Poll::Ready(Some(Err(e))) => {
                    this.encoder = None;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => return this.finish(),
                Poll::Pending => {
                    if !std::mem::take(&mut this.unflushed) {
                        return Poll::Pending;
                    }
                    if let Err(e) = encoder.flush() {
                        return this.failed(e);
                    }
                    return match encoder.output() {
                        Some(out) => Poll::Ready(Some(Ok(Frame::data(out)))),
                        None => Poll::Pending,
                    };
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.encoder.is_none() && self.trailers.is_none()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::task::Waker;

    use http_body_util::BodyExt;
    use http_body_util::channel::Channel;

    use super::*;

    const ALL: [Encoding; 3] = [Encoding::Gzip, Encoding::Brotli, Encoding::Zstd];

    fn decode(encoding: Encoding, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match encoding {
            Encoding::Gzip => {
                flate2::read::GzDecoder::new(bytes)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Encoding::Brotli => {
                brotli::Decompressor::new(bytes, 4096)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Encoding::Zstd => out = zstd::decode_all(bytes).unwrap(),
        }
        out
    }

    /// A decoder fed a stream that has not ended: what it decoded so far.
    fn decode_prefix(encoding: Encoding, bytes: &[u8]) -> Vec<u8> {
        match encoding {
            Encoding::Gzip => {
                let mut d = flate2::write::GzDecoder::new(Vec::new());
                d.write_all(bytes).unwrap();
                d.flush().unwrap();
                d.get_ref().clone()
            }
            Encoding::Brotli => {
                let mut d = brotli::DecompressorWriter::new(Vec::new(), 4096);
                d.write_all(bytes).unwrap();
                d.flush().unwrap();
                d.get_ref().clone()
            }
            Encoding::Zstd => {
                let mut d = zstd::stream::write::Decoder::new(Vec::new()).unwrap();
                d.write_all(bytes).unwrap();
                d.flush().unwrap();
                d.get_ref().clone()
            }
        }
    }

    type Polled<B> = Poll<Option<Result<Frame<<B as Body>::Data>, <B as Body>::Error>>>;

    fn poll_now<B: Body + Unpin>(body: &mut B) -> Polled<B> {
        Pin::new(body).poll_frame(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn levels_map_onto_each_scale() {
        let scale = |e| (1..=9).map(|l| codec_level(e, l)).collect::<Vec<_>>();
        assert_eq!(scale(Encoding::Gzip), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(scale(Encoding::Brotli), [1, 2, 3, 4, 4, 5, 5, 6, 6]);
        assert_eq!(scale(Encoding::Zstd), [1, 1, 1, 2, 2, 2, 3, 3, 3]);
    }

    #[tokio::test]
    async fn a_pending_upstream_gets_what_was_written_so_far_flushed_out() {
        for encoding in ALL {
            let (mut tx, upstream) = Channel::<Bytes, std::convert::Infallible>::new(4);
            let mut body = CompressBody::new(upstream, Encoder::new(encoding, 6).unwrap());
            let first = "data: the first event, sent on its own\n\n".repeat(20);
            tx.send_data(Bytes::from(first.clone())).await.unwrap();

            // The second frame has not come: all of the first is out
            // anyway, by the time the body says it has nothing more.
            let mut sent = Vec::new();
            while let Poll::Ready(frame) = poll_now(&mut body) {
                let frame = frame.expect("the body ended early").unwrap();
                sent.extend_from_slice(&frame.into_data().unwrap());
            }
            assert_eq!(
                decode_prefix(encoding, &sent),
                first.as_bytes(),
                "{encoding:?}"
            );

            let second = "data: the second\n\n";
            tx.send_data(Bytes::from_static(second.as_bytes()))
                .await
                .unwrap();
            let mut trailers = HeaderMap::new();
            trailers.insert("x-checksum", HeaderValue::from_static("abc"));
            tx.send_trailers(trailers.clone()).await.unwrap();
            drop(tx);
            let rest = body.collect().await.unwrap();
            assert_eq!(rest.trailers(), Some(&trailers), "{encoding:?}");
            sent.extend_from_slice(&rest.to_bytes());
            assert_eq!(
                decode(encoding, &sent),
                format!("{first}{second}").as_bytes(),
                "{encoding:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_large_body_from_a_fast_upstream_round_trips() {
        let text: String = (0..20_000).map(|i| format!("line {i}, ")).collect();
        for encoding in ALL {
            let chunks: Vec<Bytes> = text
                .as_bytes()
                .chunks(1000)
                .map(Bytes::copy_from_slice)
                .collect();
            let upstream = Frames(chunks.into_iter());
            let body = CompressBody::new(upstream, Encoder::new(encoding, 9).unwrap());
            let out = body.collect().await.unwrap().to_bytes();
            assert!(out.len() < text.len() / 4, "{encoding:?}: {}", out.len());
            assert_eq!(decode(encoding, &out), text.as_bytes(), "{encoding:?}");
        }
    }

    #[tokio::test]
    async fn an_empty_body_is_a_complete_empty_stream() {
        for encoding in ALL {
            let body = CompressBody::new(
                http_body_util::Empty::<Bytes>::new(),
                Encoder::new(encoding, 1).unwrap(),
            );
            let out = body.collect().await.unwrap().to_bytes();
            assert!(!out.is_empty(), "{encoding:?}");
            assert!(decode(encoding, &out).is_empty(), "{encoding:?}");
        }
    }

    /// A body whose frames are all ready at once (a fast upstream).
    struct Frames(std::vec::IntoIter<Bytes>);

    impl Body for Frames {
        type Data = Bytes;
        type Error = std::convert::Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.next().map(|b| Ok(Frame::data(b))))
        }
    }
}
