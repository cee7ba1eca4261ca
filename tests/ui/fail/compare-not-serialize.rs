use idem::idempotent;

pub struct Attachment(pub Vec<u8>);

// Compared fields are stored as JSON: `Attachment` does not implement `Serialize`.
#[idempotent(key = "mail:<to>", compare = [attachment])]
fn send_mail(to: String, attachment: Attachment) -> Result<String, idem::Error> {
    Ok(format!("{to}:{}", attachment.0.len()))
}

fn main() {}
