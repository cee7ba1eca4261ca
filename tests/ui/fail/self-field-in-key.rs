use idem::idempotent;

pub struct Tools {
    pub tenant: String,
}

impl Tools {
    #[idempotent(key = "email:<self.tenant>:<customer>")]
    pub fn send_email(&self, customer: String) -> Result<String, idem::Error> {
        Ok(format!("{}:{customer}", self.tenant))
    }
}

fn main() {}
