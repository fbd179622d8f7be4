//! WebSocket frames (RFC 6455 §5.2): header encoding and decoding, masking,
//! and reading one whole frame from a stream. No extensions, so the RSV bits
//! must be clear.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

pub const OP_CONTINUATION: u8 = 0x0;
pub const OP_TEXT: u8 = 0x1;
pub const OP_BINARY: u8 = 0x2;
pub const OP_CLOSE: u8 = 0x8;
pub const OP_PING: u8 = 0x9;
pub const OP_PONG: u8 = 0xA;

/// The longest header: 2 bytes, a 64-bit length and a masking key.
pub const MAX_HEADER: usize = 14;

/// What a frame header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub fin: bool,
    pub opcode: u8,
    pub mask: Option<[u8; 4]>,
    pub len: u64,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("reserved bits set (no extension was negotiated)")]
    ReservedBits,
    #[error("unknown opcode {0:#x}")]
    UnknownOpcode(u8),
    #[error("64-bit payload length with the most significant bit set")]
    LengthHighBit,
    #[error("control frame {opcode:#x} fragmented or longer than 125 bytes")]
    BadControl { opcode: u8 },
    #[error("payload of {len} bytes is over the limit of {max}")]
    TooLarge { len: u64, max: u64 },
}

#[derive(Debug, thiserror::Error)]
pub enum ReadFrameError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("{0}")]
    Frame(#[from] FrameError),
}

/// Header length announced by the first two bytes of a frame.
pub fn header_len(second: u8) -> usize {
    let mask = if second & 0x80 != 0 { 4 } else { 0 };
    let extended = match second & 0x7F {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    2 + extended + mask
}

/// Decodes a complete header (`header_len` bytes; extra bytes are ignored).
pub fn parse_header(bytes: &[u8]) -> Result<FrameHeader, FrameError> {
    let (first, second) = (bytes[0], bytes[1]);
    if first & 0x70 != 0 {
        return Err(FrameError::ReservedBits);
    }
    let fin = first & 0x80 != 0;
    let opcode = first & 0x0F;
    let mut at = 2;
    let len = match second & 0x7F {
        126 => {
            at += 2;
            u64::from(u16::from_be_bytes([bytes[2], bytes[3]]))
        }
        127 => {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(&bytes[2..10]);
            at += 8;
            let len = u64::from_be_bytes(raw);
            if len >> 63 != 0 {
                return Err(FrameError::LengthHighBit);
            }
            len
        }
        short => u64::from(short),
    };
    match opcode {
        OP_CONTINUATION | OP_TEXT | OP_BINARY => {}
        OP_CLOSE | OP_PING | OP_PONG if !fin || len > 125 => {
            return Err(FrameError::BadControl { opcode });
        }
        OP_CLOSE | OP_PING | OP_PONG => {}
        other => return Err(FrameError::UnknownOpcode(other)),
    }
    let mask = if second & 0x80 != 0 {
        Some([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
    } else {
        None
    };
    Ok(FrameHeader {
        fin,
        opcode,
        mask,
        len,
    })
}

/// Appends a header, using the shortest length form (7, 16 or 64 bits).
pub fn encode_header(out: &mut Vec<u8>, header: &FrameHeader) {
    let mask_bit = if header.mask.is_some() { 0x80 } else { 0 };
    out.push(if header.fin { 0x80 } else { 0 } | (header.opcode & 0x0F));
    match header.len {
        0..=125 => out.push(mask_bit | header.len as u8),
        126..=0xFFFF => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(header.len as u16).to_be_bytes());
        }
        _ => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&header.len.to_be_bytes());
        }
    }
    if let Some(mask) = header.mask {
        out.extend_from_slice(&mask);
    }
}

/// Appends a whole final frame; the payload is masked when `mask` is set.
pub fn encode_frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) {
    let header = FrameHeader {
        fin: true,
        opcode,
        mask,
        len: payload.len() as u64,
    };
    encode_header(out, &header);
    let start = out.len();
    out.extend_from_slice(payload);
    if let Some(mask) = mask {
        apply_mask(&mut out[start..], mask);
    }
}

/// XORs `data` with the masking key (masking and unmasking are the same).
pub fn apply_mask(data: &mut [u8], mask: [u8; 4]) {
    for (i, byte) in data.iter_mut().enumerate() {
        *byte ^= mask[i & 3];
    }
}

/// Reads one frame into `payload` (unmasked) and returns its header;
/// payloads longer than `max_len` are refused before they are read.
pub async fn read_frame<R>(
    reader: &mut R,
    payload: &mut Vec<u8>,
    max_len: u64,
) -> Result<FrameHeader, ReadFrameError>
where
    R: AsyncRead + Unpin,
{
    let mut head = [0u8; MAX_HEADER];
    reader.read_exact(&mut head[..2]).await?;
    let len = header_len(head[1]);
    reader.read_exact(&mut head[2..len]).await?;
    let header = parse_header(&head[..len])?;
    if header.len > max_len {
        return Err(FrameError::TooLarge {
            len: header.len,
            max: max_len,
        }
        .into());
    }
    // Within max_len, which the callers keep far below usize::MAX.
    payload.resize(header.len as usize, 0);
    reader.read_exact(payload).await?;
    if let Some(mask) = header.mask {
        apply_mask(payload, mask);
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

    async fn round_trip(opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> FrameHeader {
        let mut wire = Vec::new();
        encode_frame(&mut wire, opcode, payload, mask);
        let mut reader = wire.as_slice();
        let mut got = Vec::new();
        let header = read_frame(&mut reader, &mut got, 1 << 20).await.unwrap();
        assert_eq!(got, payload);
        assert!(reader.is_empty(), "frame not consumed whole");
        header
    }

    #[test]
    fn rfc_examples_encode_byte_for_byte() {
        // RFC 6455 §5.7: unmasked and masked "Hello".
        let mut out = Vec::new();
        encode_frame(&mut out, OP_TEXT, b"Hello", None);
        assert_eq!(out, [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]);
        out.clear();
        encode_frame(&mut out, OP_TEXT, b"Hello", Some(MASK));
        assert_eq!(
            out,
            [
                0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58
            ]
        );
        // 256 bytes: 16-bit length; 65536 bytes: 64-bit length.
        out.clear();
        encode_frame(&mut out, OP_BINARY, &[0; 256], None);
        assert_eq!(out[..4], [0x82, 0x7E, 0x01, 0x00]);
        out.clear();
        encode_frame(&mut out, OP_BINARY, &vec![0; 65_536], None);
        assert_eq!(
            out[..10],
            [0x82, 0x7F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00]
        );
    }

    #[tokio::test]
    async fn frames_round_trip_in_every_length_form() {
        for len in [0usize, 1, 125, 126, 127, 65_535, 65_536, 70_000] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            for mask in [None, Some(MASK)] {
                let header = round_trip(OP_BINARY, &payload, mask).await;
                assert_eq!(
                    header,
                    FrameHeader {
                        fin: true,
                        opcode: OP_BINARY,
                        mask,
                        len: len as u64
                    }
                );
            }
        }
    }

    #[test]
    fn masked_payload_differs_and_unmasks_back() {
        let mut out = Vec::new();
        encode_frame(&mut out, OP_BINARY, b"abcdefgh", Some(MASK));
        let header = parse_header(&out).unwrap();
        assert_eq!(header_len(out[1]), 6);
        let mut body = out[6..].to_vec();
        assert_ne!(body, b"abcdefgh");
        apply_mask(&mut body, header.mask.unwrap());
        assert_eq!(body, b"abcdefgh");
    }

    #[test]
    fn header_lengths() {
        assert_eq!(header_len(0x05), 2);
        assert_eq!(header_len(0x85), 6);
        assert_eq!(header_len(0x7E), 4);
        assert_eq!(header_len(0xFE), 8);
        assert_eq!(header_len(0x7F), 10);
        assert_eq!(header_len(0xFF), 14);
    }

    #[test]
    fn bad_headers_are_refused() {
        assert_eq!(parse_header(&[0xC2, 0x00]), Err(FrameError::ReservedBits));
        assert_eq!(
            parse_header(&[0x83, 0x00]),
            Err(FrameError::UnknownOpcode(3))
        );
        assert_eq!(
            parse_header(&[0x08, 0x00]),
            Err(FrameError::BadControl { opcode: OP_CLOSE })
        );
        assert_eq!(
            parse_header(&[0x89, 0x7E, 0x00, 0x7E]),
            Err(FrameError::BadControl { opcode: OP_PING })
        );
        let mut long = vec![0x82, 0x7F];
        long.extend_from_slice(&u64::MAX.to_be_bytes());
        assert_eq!(parse_header(&long), Err(FrameError::LengthHighBit));
    }

    #[tokio::test]
    async fn oversized_payloads_are_refused_before_reading() {
        let mut wire = Vec::new();
        encode_frame(&mut wire, OP_BINARY, &[1; 300], None);
        let mut got = Vec::new();
        let err = read_frame(&mut wire.as_slice(), &mut got, 200)
            .await
            .unwrap_err();
        assert!(matches!(
            err,
            ReadFrameError::Frame(FrameError::TooLarge { len: 300, max: 200 })
        ));
    }

    #[tokio::test]
    async fn a_truncated_frame_is_an_io_error() {
        let mut wire = Vec::new();
        encode_frame(&mut wire, OP_BINARY, &[1; 10], None);
        wire.truncate(7);
        let mut got = Vec::new();
        let err = read_frame(&mut wire.as_slice(), &mut got, 200)
            .await
            .unwrap_err();
        assert!(matches!(err, ReadFrameError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof));
    }
}
