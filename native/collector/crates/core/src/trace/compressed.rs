//! Checks the body compression of an Arrow IPC file before arrow-ipc decodes it.
//!
//! A compressed buffer starts with its decompressed length (int64, Arrow's `BodyCompression`),
//! and arrow-ipc allocates that length before it decompresses. So every buffer's declared length
//! is read here first: a table's buffers together may hold at most [`MAX_ENTRY_BYTES`]
//! decompressed (what a stored table may hold), and a ZSTD buffer's frame must say the same
//! length. A file that fails is refused with a message naming the batch and buffer; an
//! uncompressed file passes untouched.

use arrow_ipc::{root_as_footer, root_as_message, Block};

use super::limits::MAX_ENTRY_BYTES;
use super::TraceError;

fn bad(table: &str, what: String) -> TraceError {
    TraceError::Invalid(format!("table {table}: {what}"))
}

/// The ZSTD frame's content size, when its header gives one (RFC 8878, 3.1.1.1).
fn zstd_content_size(frame: &[u8]) -> Option<u64> {
    if frame.len() < 6 || frame[..4] != [0x28, 0xb5, 0x2f, 0xfd] {
        return None;
    }
    let flg = frame[4];
    let single = (flg >> 5) & 1 == 1;
    let fcs_bytes = match flg >> 6 {
        0 if single => 1,
        0 => return None,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let dict_bytes = [0usize, 1, 2, 4][usize::from(flg & 3)];
    let at = 5 + usize::from(!single) + dict_bytes;
    let bytes = frame.get(at..at + fcs_bytes)?;
    let value = bytes.iter().rev().fold(0u64, |v, &b| (v << 8) | u64::from(b));
    Some(if fcs_bytes == 2 { value + 256 } else { value })
}

/// Checks every compressed buffer of the IPC file `bytes` of table `table` (see the module comment).
pub fn check_compressed_buffers(table: &str, bytes: &[u8]) -> Result<(), TraceError> {
    let n = bytes.len();
    if n < 16 {
        return Ok(()); // arrow-ipc refuses it with its own message
    }
    let footer_len = i32::from_le_bytes(bytes[n - 10..n - 6].try_into().unwrap_or_default());
    let Some(footer_start) = usize::try_from(footer_len).ok().and_then(|l| (n - 10).checked_sub(l)) else {
        return Ok(());
    };
    let Ok(footer) = root_as_footer(&bytes[footer_start..n - 10]) else {
        return Ok(());
    };
    let blocks: Vec<Block> = footer
        .dictionaries()
        .into_iter()
        .flatten()
        .chain(footer.recordBatches().into_iter().flatten())
        .copied()
        .collect();
    let mut total: u64 = 0;
    for (k, block) in blocks.iter().enumerate() {
        let what = format!("batch {k}");
        let start = usize::try_from(block.offset()).map_err(|_| bad(table, format!("{what} has a negative offset")))?;
        let meta = usize::try_from(block.metaDataLength())
            .map_err(|_| bad(table, format!("{what} has a negative metadata length")))?;
        let body_len = usize::try_from(block.bodyLength())
            .map_err(|_| bad(table, format!("{what} has a negative body length")))?;
        let body_start = start.checked_add(meta).filter(|&b| b <= footer_start);
        let body = body_start
            .and_then(|b| b.checked_add(body_len).filter(|&e| e <= footer_start).map(|e| &bytes[b..e]))
            .ok_or_else(|| bad(table, format!("{what} lies outside the file")))?;
        let mut m = &bytes[start..start + meta];
        if m.len() >= 8 && m[..4] == [0xff; 4] {
            m = &m[8..];
        } else if m.len() >= 4 {
            m = &m[4..];
        }
        let message = root_as_message(m).map_err(|e| bad(table, format!("{what}: damaged metadata ({e})")))?;
        let batch =
            message.header_as_record_batch().or_else(|| message.header_as_dictionary_batch().and_then(|d| d.data()));
        let Some(batch) = batch else { continue };
        if batch.compression().is_none() {
            continue;
        }
        for (i, buffer) in batch.buffers().into_iter().flatten().enumerate() {
            let (offset, length) = (buffer.offset(), buffer.length());
            if length == 0 {
                continue;
            }
            let data = usize::try_from(offset)
                .ok()
                .zip(usize::try_from(length).ok())
                .and_then(|(o, l)| body.get(o..o.checked_add(l)?))
                .ok_or_else(|| bad(table, format!("{what}, buffer {i} lies outside its body")))?;
            let Some(prefix) = data.get(..8) else {
                return Err(bad(table, format!("{what}, buffer {i} is too short for its decompressed length")));
            };
            let declared = i64::from_le_bytes(prefix.try_into().unwrap_or_default());
            if declared == -1 {
                continue; // stored as it is
            }
            let declared = u64::try_from(declared)
                .map_err(|_| bad(table, format!("{what}, buffer {i} declares a decompressed length of {declared}")))?;
            total = total.saturating_add(declared);
            if total > MAX_ENTRY_BYTES {
                return Err(bad(
                    table,
                    format!(
                        "{what}, buffer {i}: its compressed buffers decompress to more than the {MAX_ENTRY_BYTES} bytes a table may hold"
                    ),
                ));
            }
            if declared > 0 && data[8..].starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
                let frame = zstd_content_size(&data[8..]);
                if frame != Some(declared) {
                    return Err(bad(
                        table,
                        format!(
                            "{what}, buffer {i}: its ZSTD frame holds {} bytes, its Arrow buffer says {declared}",
                            frame.map_or("an unstated number of".to_string(), |f| f.to_string())
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_size_of_zstd_headers() {
        // single segment, 1-byte size
        assert_eq!(zstd_content_size(&[0x28, 0xb5, 0x2f, 0xfd, 0x20, 200]), Some(200));
        // 2-byte size (+256), window descriptor present
        assert_eq!(zstd_content_size(&[0x28, 0xb5, 0x2f, 0xfd, 0x40, 0x50, 0x00, 0x01]), Some(256 + 256));
        // no size
        assert_eq!(zstd_content_size(&[0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x50]), None);
        assert_eq!(zstd_content_size(&[1, 2, 3]), None);
    }
}
