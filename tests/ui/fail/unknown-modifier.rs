use idem::idempotent;

#[idempotent(key = "stock:<sku:upper>")]
fn reserve_stock(sku: String) -> Result<String, idem::Error> {
    Ok(sku)
}

fn main() {}
